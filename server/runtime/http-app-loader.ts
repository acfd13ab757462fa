import { pathToFileURL } from "node:url";
import type { HttpAppSpec } from "./graph-config-http.js";

/** A Fetch-style handler: what `http.app` may name besides a Hono app. */
export type FetchHandler = (request: Request) => Response | Promise<Response>;

/**
 * The shape of a Hono app this server relies on: `route` copies its routes and middleware into
 * another app, `fetch` serves. Duck-typed, so an app built with the user's own copy of hono works.
 */
export interface HonoLike {
  readonly fetch: FetchHandler;
  readonly route: (path: string, app: HonoLike) => unknown;
  readonly routes: readonly unknown[];
}

/** The user's app, by what it can do: a Hono app runs its middleware for every route. */
export type UserHttpApp =
  | { readonly kind: "hono"; readonly app: HonoLike }
  | { readonly kind: "fetch"; readonly fetch: FetchHandler };

/**
 * Imports the module `http.app` names (tsx runs the process, so TypeScript loads as is) and takes
 * the named export, or `app`, or `default`. Throws with a message naming `http.app` when the module
 * cannot be loaded or holds no app.
 */
export async function loadHttpApp(spec: HttpAppSpec): Promise<UserHttpApp> {
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(spec.file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(
      `http.app "${spec.text}": the module ${spec.file} cannot be loaded: ${(error as Error).message}`,
    );
  }
  const names = spec.exportName === undefined ? ["app", "default"] : [spec.exportName];
  const name = names.find((n) => module[n] !== undefined);
  const value = name === undefined ? undefined : module[name];
  if (value === undefined)
    throw new Error(
      `http.app "${spec.text}": ${spec.file} exports no ${names.map((n) => `"${n}"`).join(" or ")}; export a Hono app or a (request) => Response function`,
    );
  if (isHono(value)) return { kind: "hono", app: value };
  if (typeof value === "function") return { kind: "fetch", fetch: value as FetchHandler };
  if (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { fetch?: unknown }).fetch === "function"
  ) {
    const target = value as { fetch: FetchHandler };
    return { kind: "fetch", fetch: (request) => target.fetch(request) };
  }
  throw new Error(
    `http.app "${spec.text}": export "${name}" is ${typeof value}, not a Hono app, a (request) => Response function or an object with fetch`,
  );
}

function isHono(value: unknown): value is HonoLike {
  if (typeof value !== "object" || value === null) return false;
  const app = value as Partial<Record<keyof HonoLike, unknown>>;
  return typeof app.fetch === "function" && typeof app.route === "function" && Array.isArray(app.routes);
}
