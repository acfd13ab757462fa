import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AgentplaneClient, type ClientProtocol, createClient } from "../../sdk/index.js";
import { type App, type AppHooks, startApp } from "../../server/app.js";
import { type BulkExportSettings, type Config, DEFAULT_BULK_EXPORT_SETTINGS } from "../../server/config.js";
import { createLogger, type Logger } from "../../server/logger.js";
import { createTestDatabase } from "./database.js";
import { testConfig } from "./test-config.js";

/** A server started in-process for a test file, on its own database and port 0. */
export interface TestApp {
  /** `http://127.0.0.1:<port>`. */
  readonly baseUrl: string;
  /** The admin key bootstrap created (personal key of the default organization's admin). */
  readonly adminKey: string;
  /** The running app. */
  readonly app: App;
  /** The database URL. */
  readonly databaseUrl: string;
  /** An SDK client; defaults to the admin key. */
  client(options?: { apiKey?: string; tenantId?: string; protocol?: ClientProtocol }): AgentplaneClient;
  /** `fetch` against the server with `x-api-key` (admin by default) and JSON handling. */
  fetch(path: string, init?: RequestInit & { apiKey?: string | null; tenantId?: string }): Promise<Response>;
  /** Stops the server and drops its database. */
  stop(): Promise<void>;
}

/** Bulk export settings for tests: the defaults, with destinations on loopback (s3rver) allowed. */
export const TEST_BULK_EXPORT_SETTINGS: BulkExportSettings = {
  ...DEFAULT_BULK_EXPORT_SETTINGS,
  allowPrivateEndpoints: true,
};

/**
 * Starts a {@link TestApp}; `overrides` change the config (port and database are set for you). With
 * `overrides.databaseUrl` it joins that database (another app's, to act as a second process) instead
 * of creating one, and leaves it in place when stopped. `options.log` replaces the stderr logger (to
 * read what the server logged); `options.hooks` replace parts of the process (its clock).
 */
export async function startTestApp(
  overrides: Partial<Config> = {},
  options: { log?: Logger; hooks?: AppHooks } = {},
): Promise<TestApp> {
  const db = overrides.databaseUrl
    ? { url: overrides.databaseUrl, drop: async () => {} }
    : await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), "agentplane-app-"));
  const adminKey = overrides.bootstrapApiKey ?? `ap_pt_test_${randomBytes(24).toString("base64url")}`;
  const config = testConfig({
    databaseUrl: db.url,
    dataDir,
    bootstrapApiKey: adminKey,
    bulkExport: TEST_BULK_EXPORT_SETTINGS,
    ...overrides,
  });
  const app = await startApp(config, options.log ?? createLogger(config.logLevel), options.hooks);
  const baseUrl = `http://127.0.0.1:${app.address.port}`;
  return {
    baseUrl,
    adminKey,
    app,
    databaseUrl: db.url,
    client: (options = {}) =>
      createClient({
        baseUrl,
        apiKey: options.apiKey ?? adminKey,
        ...(options.tenantId ? { tenantId: options.tenantId } : {}),
        ...(options.protocol ? { protocol: options.protocol } : {}),
      }),
    fetch: (path, init = {}) => {
      const { apiKey, tenantId, ...rest } = init;
      const headers = new Headers(rest.headers);
      const key = apiKey === undefined ? adminKey : apiKey;
      if (key !== null) headers.set("x-api-key", key);
      if (tenantId) headers.set("x-tenant-id", tenantId);
      if (rest.body !== undefined && !headers.has("content-type"))
        headers.set("content-type", "application/json");
      return fetch(`${baseUrl}${path}`, { ...rest, headers });
    },
    stop: async () => {
      await app.stop();
      await db.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
