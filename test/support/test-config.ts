import {
  type Config,
  DEFAULT_BULK_EXPORT_SETTINGS,
  DEFAULT_CORS_ORIGINS,
  DEFAULT_CUSTOM_AUTH_SETTINGS,
  DEFAULT_RUN_SETTINGS,
  DEFAULT_WEBHOOK_SETTINGS,
} from "../../server/config.js";

/** Shutdown grace of test servers: drains quickly, still long enough for a request in flight. */
const TEST_SHUTDOWN_GRACE_MS = 2_000;

/**
 * A complete {@link Config} for a server started in-process: what `loadConfig` gives an empty
 * environment, on port 0 of loopback, with `overrides` applied. Run settings, when not overridden,
 * give running runs the config's short shutdown grace rather than the production three minutes.
 */
export function testConfig(overrides: Partial<Config> & Pick<Config, "dataDir">): Config {
  const shutdownGraceMs = overrides.shutdownGraceMs ?? TEST_SHUTDOWN_GRACE_MS;
  return {
    port: 0,
    host: "127.0.0.1",
    databaseUrl: undefined,
    role: "all",
    auth: "apikey",
    bootstrapApiKey: undefined,
    plan: "enterprise",
    adminEmail: "admin@example.com",
    dbPoolMax: 5,
    statementTimeoutMs: 60_000,
    shutdownGraceMs,
    logLevel: "error",
    graphConfigPath: undefined,
    usageReporting: true,
    runTracing: true,
    loopbackUrl: undefined,
    assistantDefaults: undefined,
    schemaResolveTimeoutMs: 30_000,
    secretKey: undefined,
    aes: undefined,
    corsOrigins: DEFAULT_CORS_ORIGINS,
    bulkExport: DEFAULT_BULK_EXPORT_SETTINGS,
    runs: { ...DEFAULT_RUN_SETTINGS, shutdownGraceMs },
    webhooks: DEFAULT_WEBHOOK_SETTINGS,
    customAuth: DEFAULT_CUSTOM_AUTH_SETTINGS,
    ...overrides,
  };
}
