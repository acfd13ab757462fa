import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { App } from "../../server/app.js";
import type { Config } from "../../server/config.js";
import { testConfig } from "../../test/support/test-config.js";

/** The server's default pool size (server/config.ts), so concurrency 32 queues on the pool as in production. */
export const BENCH_DB_POOL_MAX = 10;
/** Random bytes in the bench's admin key: far above the 24-character minimum the server accepts. */
const API_KEY_BYTES = 24;
/** AES-256. */
const AES_KEY_BYTES = 32;
/** Time the server gets to drain at the end; the bench has nothing in flight by then. */
const SHUTDOWN_GRACE_MS = 1_000;
/** Reading a graph's types: the server's default (30 s), which the JS server shares. */
const SCHEMA_RESOLVE_TIMEOUT_MS = 30_000;
/** Postgres statement timeout: bench requests take milliseconds, so only a hung database would reach it. */
const STATEMENT_TIMEOUT_MS = 60_000;
/** This checkout: the agentplane the benches measure unless told to run another one. */
export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** What a bench's agentplane needs besides the fixed bench configuration (JSON-serialisable). */
export interface BenchAppSetup {
  /** The bench's Postgres. */
  databaseUrl: string;
  /** Admin key created at first start; every bench request sends it. */
  apiKey: string;
  /** The server's data directory, inside the bench's temporary directory. */
  dataDir: string;
  /** The graphs file to serve; the bundled example graph when absent. */
  graphConfigPath?: string;
  /** How long reading a graph's types may take; the server's default (30 s) when absent. */
  schemaResolveTimeoutMs?: number;
  /** Which parts of the server this process runs (`AGENTPLANE_ROLE`); all of them when absent. */
  role?: Config["role"];
  /**
   * What the server logs (`AGENTPLANE_LOG_LEVEL`); errors only when absent. `info` turns on the
   * access log, which is what an operator runs with.
   */
  logLevel?: Config["logLevel"];
  /** Built-in encryption at rest, as {@link benchEncryption} makes it; off when absent. */
  encryption?: BenchEncryption;
  /** Whether agent runs are traced into the tracing store (`AGENTPLANE_RUN_TRACING`); on when absent. */
  runTracing?: boolean;
}

/** Encryption at rest of a bench server: hex keys (the setup travels as JSON) and the allowlist. */
export interface BenchEncryption {
  keysHex: string[];
  jsonKeys: string[];
}

/**
 * A fresh key and the allowlist `jsonKeys`: the benches name keys their data carries but never
 * filters on, so the variant does the encryption work of every write and read and answers the same.
 */
export function benchEncryption(jsonKeys: string[]): BenchEncryption {
  return { keysHex: [randomBytes(AES_KEY_BYTES).toString("hex")], jsonKeys };
}

/** A fresh admin key in the format the server issues. */
export function createBenchApiKey(): string {
  return `ap_pt_bench_${randomBytes(API_KEY_BYTES).toString("base64url")}`;
}

/** The configuration every bench server runs with, as server/config.ts would parse it. */
function benchConfig(setup: BenchAppSetup): Config {
  return testConfig({
    databaseUrl: setup.databaseUrl,
    dataDir: setup.dataDir,
    role: setup.role ?? "all",
    bootstrapApiKey: setup.apiKey,
    dbPoolMax: BENCH_DB_POOL_MAX,
    statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    shutdownGraceMs: SHUTDOWN_GRACE_MS,
    logLevel: setup.logLevel ?? "error",
    graphConfigPath: setup.graphConfigPath,
    schemaResolveTimeoutMs: setup.schemaResolveTimeoutMs ?? SCHEMA_RESOLVE_TIMEOUT_MS,
    runTracing: setup.runTracing !== false,
    ...(setup.encryption && {
      aes: {
        keys: setup.encryption.keysHex.map((hex) => Buffer.from(hex, "hex")),
        jsonKeys: setup.encryption.jsonKeys,
      },
    }),
  });
}

/** What a checkout's server/app.ts and server/logger.ts export that the benches use. */
interface CheckoutModules {
  startApp: typeof import("../../server/app.js").startApp;
  createLogger: typeof import("../../server/logger.js").createLogger;
}

/**
 * Starts agentplane as the benches measure it: every role in one process (or `setup.role`) on a free port of 127.0.0.1,
 * API-key auth with `setup.apiKey` as the admin key, the default pool size, usage reporting on, and
 * only errors logged unless `setup.logLevel` says otherwise. `root` is the checkout whose server runs (this one by default; another one to
 * measure a baseline side by side): its `server/app.ts` is imported from there, with its own
 * node_modules, and must still export `startApp(config, log)`.
 */
export async function startBenchApp(setup: BenchAppSetup, root: string = REPO_ROOT): Promise<App> {
  const load = (path: string) => import(pathToFileURL(join(root, path)).href);
  const { startApp } = (await load("server/app.ts")) as Pick<CheckoutModules, "startApp">;
  const { createLogger } = (await load("server/logger.ts")) as Pick<CheckoutModules, "createLogger">;
  const config = benchConfig(setup);
  return startApp(config, createLogger(config.logLevel));
}
