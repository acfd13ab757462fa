import { randomBytes } from "node:crypto";
import { type App, startApp } from "../../server/app.js";
import { createLogger } from "../../server/logger.js";

/** The server's default pool size (server/config.ts), so concurrency 32 queues on the pool as in production. */
export const BENCH_DB_POOL_MAX = 10;
/** Random bytes in the bench's admin key: far above the 24-character minimum the server accepts. */
const API_KEY_BYTES = 24;
/** Time the server gets to drain at the end; the bench has nothing in flight by then. */
const SHUTDOWN_GRACE_MS = 1_000;
/** Reading a graph's types: the server's default (30 s), which the JS server shares. */
const SCHEMA_RESOLVE_TIMEOUT_MS = 30_000;
/** Postgres statement timeout: bench requests take milliseconds, so only a hung database would reach it. */
const STATEMENT_TIMEOUT_MS = 60_000;

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
}

/** A fresh admin key in the format the server issues. */
export function createBenchApiKey(): string {
  return `ap_pt_bench_${randomBytes(API_KEY_BYTES).toString("base64url")}`;
}

/**
 * Starts agentplane as the benches measure it: every role in one process on a free port of 127.0.0.1,
 * API-key auth with `setup.apiKey` as the admin key, the default pool size, usage reporting on, and
 * only errors logged.
 */
export function startBenchApp(setup: BenchAppSetup): Promise<App> {
  return startApp(
    {
      port: 0,
      host: "127.0.0.1",
      databaseUrl: setup.databaseUrl,
      dataDir: setup.dataDir,
      role: "all",
      auth: "apikey",
      bootstrapApiKey: setup.apiKey,
      plan: "enterprise",
      adminEmail: "admin@example.com",
      dbPoolMax: BENCH_DB_POOL_MAX,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
      shutdownGraceMs: SHUTDOWN_GRACE_MS,
      logLevel: "error",
      graphConfigPath: setup.graphConfigPath,
      usageReporting: true,
      assistantDefaults: undefined,
      schemaResolveTimeoutMs: setup.schemaResolveTimeoutMs ?? SCHEMA_RESOLVE_TIMEOUT_MS,
    },
    createLogger("error"),
  );
}
