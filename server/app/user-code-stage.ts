import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import { type CustomEncryptionModule, loadCustomEncryption } from "../runtime/custom-encryption-module.js";
import { type GraphRegistry, loadGraphRegistry } from "../runtime/graph-registry.js";
import { loadHttpApp, type UserHttpApp } from "../runtime/http-app-loader.js";
import { buildUiBundles, type UiBundles } from "../runtime/ui-bundler.js";
import { corsPolicyFor } from "../transport/graphs-file-http.js";
import type { CorsPolicy } from "../transport/rest/cors.js";
import type { ShutdownSteps } from "./shutdown-steps.js";

/** The graphs file and everything it names, loaded before anything is started. */
export interface UserCode {
  readonly graphs: GraphRegistry;
  /** The graphs file's `http` section. */
  readonly http: GraphRegistry["settings"]["http"];
  /** The graphs file's custom encryption module, when it names one. */
  readonly customEncryption: CustomEncryptionModule | undefined;
  /** The graphs file's custom HTTP app, in processes that serve HTTP APIs. */
  readonly userApp: UserHttpApp | undefined;
  readonly cors: CorsPolicy;
  readonly uiBundles: UiBundles;
}

/**
 * Stage 0: the graphs, the custom encryption and HTTP app, the UI bundles. A broken graph, module or
 * component stops start-up here, before Postgres starts or an admin key is printed.
 */
export async function loadUserCode(config: Config, log: Logger, steps: ShutdownSteps): Promise<UserCode> {
  const graphs = await loadGraphRegistry({
    configPath: config.graphConfigPath,
    cwd: process.cwd(),
    log,
    schemaTimeoutMs: config.schemaResolveTimeoutMs,
    assistantDefaults: config.assistantDefaults,
  });
  steps.onStop("graphs", () => graphs.close());
  const http = graphs.settings.http;
  const customEncryption =
    (graphs.settings.encryption &&
      (await loadCustomEncryption(graphs.settings.encryption, {
        builtInAesConfigured: config.aes !== undefined,
      }))) ||
    undefined;
  const userApp = http.app && config.role !== "worker" ? await loadHttpApp(http.app) : undefined;
  const cors = corsPolicyFor(config.corsOrigins, config.auth, http);
  // `http.disable_ui` serves no /ui routes (transport/graphs-file-http.ts), so nothing is bundled.
  const servesUi = config.role !== "worker" && !http.disabledGroups?.includes("ui");
  const uiBundles = await buildUiBundles(servesUi ? graphs.settings.ui : undefined, log);
  return { graphs, http, customEncryption, userApp, cors, uiBundles };
}
