import type { Config } from "../config.js";

/**
 * Where loopback clients go, known only once the server listens: built before the stages that hand
 * it to loopback clients, filled in by the transport stage.
 */
export interface ProcessUrls {
  /** Where graphs' loopback clients go: the configured URL, or (role `all`) this process's own. */
  api(): string | undefined;
  /** This process's own address once it listens: where a custom route's loopback clients go. */
  own(): string | undefined;
  /** Records this process's address (with the mount prefix) once it listens. */
  listening(ownUrl: string): void;
}

/** The URLs of a process of `config`, before it listens. */
export function createProcessUrls(config: Pick<Config, "loopbackUrl" | "role">): ProcessUrls {
  let apiUrl = config.loopbackUrl;
  let ownUrl: string | undefined;
  return {
    api: () => apiUrl,
    own: () => ownUrl,
    listening(url) {
      ownUrl = url;
      if (config.role === "all") apiUrl ??= url;
    },
  };
}
