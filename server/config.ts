/**
 * The environment contract of one process: every setting, its default and its validation. Kept in
 * one file past the usual size on purpose: it is read beside docs/configuration.md's table, and
 * `loadConfig` reports every problem at once, which splitting it would scatter.
 */
import { isIP } from "node:net";
import { resolve } from "node:path";
import { isUuid } from "./ids.js";
import { parseWebhookHeaders } from "./net/webhook-headers.js";
import type { WebhookUrlPolicy } from "./net/webhook-url-policy.js";
import { type AesSettings, parseAesSettings } from "./settings/aes-settings.js";
import {
  LANGGRAPH_CONFIG,
  parseSystemAssistantDefaults,
  type SystemAssistantDefaults,
} from "./settings/system-assistant-defaults.js";

/** The parts of the product one process runs. */
export type ProcessRole = "all" | "api" | "worker";

/** How requests authenticate. */
export type AuthMode = "apikey" | "none";

/** Log verbosity, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** Plan tiers an organization can be on. */
export type PlanTier = "developer" | "plus" | "enterprise";

/** Limits and tuning of bulk export (the seed's Limits table, as settings). */
export interface BulkExportSettings {
  /** Retries of a failed export run (`AGENTPLANE_EXPORT_MAX_RETRIES`). */
  readonly maxRetries: number;
  /** Seconds between an export run's retries, fixed (`AGENTPLANE_EXPORT_RETRY_DELAY_SECONDS`). */
  readonly retryDelaySeconds: number;
  /** Seconds one attempt of an export run may take (`AGENTPLANE_EXPORT_RUN_TIMEOUT_SECONDS`). */
  readonly runTimeoutSeconds: number;
  /** Seconds a whole export may take before it is TimedOut (`AGENTPLANE_EXPORT_TIMEOUT_SECONDS`). */
  readonly exportTimeoutSeconds: number;
  /** Runs of one export in flight at once (`AGENTPLANE_EXPORT_MAX_CONCURRENT_RUNS`). */
  readonly maxConcurrentRunsPerExport: number;
  /** Exports of one workspace in flight at once (`AGENTPLANE_EXPORT_MAX_CONCURRENT_EXPORTS`). */
  readonly maxConcurrentExportsPerWorkspace: number;
  /** Export runs one worker process works on at once (`AGENTPLANE_EXPORT_WORKERS`). */
  readonly workers: number;
  /** Seconds an attempt's lease lasts without a heartbeat (`AGENTPLANE_EXPORT_LEASE_SECONDS`). */
  readonly leaseSeconds: number;
  /**
   * Seconds between maintenance passes: lapsed leases, timeouts, schedules, waiting work
   * (`AGENTPLANE_EXPORT_MAINTENANCE_INTERVAL_SECONDS`).
   */
  readonly maintenanceIntervalSeconds: number;
  /** Rows per Parquet file at most (`AGENTPLANE_EXPORT_FILE_MAX_ROWS`). */
  readonly fileMaxRows: number;
  /** Bytes per Parquet file, roughly, at most (`AGENTPLANE_EXPORT_FILE_MAX_MB`, in MiB). */
  readonly fileMaxBytes: number;
  /**
   * Whether destination endpoints may be loopback or private-network addresses
   * (`AGENTPLANE_EXPORT_ALLOW_PRIVATE_ENDPOINTS`; see server/net/endpoint-policy.ts).
   */
  readonly allowPrivateEndpoints: boolean;
}

/** Execution and streaming of agent runs (the Agent Server's runs). */
export interface RunSettings {
  /** Runs one worker process executes at once (`AGENTPLANE_RUN_WORKERS`, `N_JOBS_PER_WORKER`). */
  readonly workers: number;
  /** Attempts of a run before it ends in error: the first plus takeovers (`AGENTPLANE_RUN_MAX_ATTEMPTS`). */
  readonly maxAttempts: number;
  /** Seconds an attempt's lease lasts without a heartbeat (`AGENTPLANE_RUN_LEASE_SECONDS`). */
  readonly leaseSeconds: number;
  /** Seconds a run may execute before it ends in error (`AGENTPLANE_RUN_TIMEOUT_SECONDS`). */
  readonly timeoutSeconds: number;
  /** Seconds a resumable run's events are kept after it ends (`AGENTPLANE_STREAM_TTL_SECONDS`). */
  readonly streamTtlSeconds: number;
  /**
   * Milliseconds a stopping worker lets its runs finish before handing them back to the queue
   * (`BG_JOB_SHUTDOWN_GRACE_PERIOD_SECS`, in seconds, as the reference server names it).
   */
  readonly shutdownGraceMs: number;
  /** Whether creating a run updates its thread's metadata (`FF_RICH_THREADS`). */
  readonly richThreads: boolean;
}

/** Delivery of run webhooks (a run's `webhook` URL receives the run when it ends). */
export interface WebhookSettings {
  /** False stops every webhook call of the server (`AGENTPLANE_DISABLE_WEBHOOKS=true`). */
  readonly enabled: boolean;
  /**
   * Host names a webhook may target, lower case; `*.example.com` matches the subdomains of
   * example.com (`AGENTPLANE_WEBHOOK_ALLOWED_HOSTS`, comma-separated). Empty: any public host.
   */
  readonly allowedHosts: readonly string[];
  /**
   * Whether webhooks may reach loopback and private-network addresses
   * (`AGENTPLANE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES`; see server/net/endpoint-policy.ts).
   */
  readonly allowPrivateAddresses: boolean;
  /**
   * Headers sent with every call, their `${{ env.NAME }}` templates filled in
   * (`AGENTPLANE_WEBHOOK_HEADERS`, a JSON object; `AGENTPLANE_WEBHOOK_ENV_PREFIX` names the variables
   * templates may read).
   */
  readonly headers: Readonly<Record<string, string>>;
  /** Seconds one call may take before it counts as failed (`AGENTPLANE_WEBHOOK_TIMEOUT_SECONDS`). */
  readonly timeoutSeconds: number;
  /** Calls of one webhook at most, the first included (`AGENTPLANE_WEBHOOK_MAX_ATTEMPTS`). */
  readonly maxAttempts: number;
  /**
   * Seconds before the first retry; each later retry waits about twice as long as the one before,
   * with jitter (`AGENTPLANE_WEBHOOK_RETRY_DELAY_SECONDS`).
   */
  readonly retryDelaySeconds: number;
  /** The graphs file's `webhooks.url` policy (server/runtime/graph-config-webhooks.ts); absent: none. */
  readonly urlPolicy?: WebhookUrlPolicy;
  /** The graphs file's `webhooks.allowed_fields`: the body fields sent; absent: all. */
  readonly allowedFields?: readonly string[];
}

/** The validated configuration of one process. Built once at start-up by {@link loadConfig}. */
export interface Config {
  /** TCP port for every protocol (`AGENTPLANE_PORT`). */
  readonly port: number;
  /** Interface to bind (`AGENTPLANE_HOST`). */
  readonly host: string;
  /** Postgres URL (`DATABASE_URL`); undefined starts an embedded Postgres under `dataDir`. */
  readonly databaseUrl: string | undefined;
  /** Where embedded Postgres and generated secrets live (`AGENTPLANE_DATA_DIR`), absolute. */
  readonly dataDir: string;
  /** What this process runs (`AGENTPLANE_ROLE`). */
  readonly role: ProcessRole;
  /** `apikey`, or `none` to treat every request as the default workspace's admin (`AGENTPLANE_AUTH`). */
  readonly auth: AuthMode;
  /** Admin key to create at first start instead of a random one (`AGENTPLANE_API_KEY`). */
  readonly bootstrapApiKey: string | undefined;
  /** Plan of the organization created at first start (`AGENTPLANE_PLAN`). */
  readonly plan: PlanTier;
  /** Email of the admin user created at first start (`AGENTPLANE_ADMIN_EMAIL`). */
  readonly adminEmail: string;
  /** Largest number of Postgres connections (`AGENTPLANE_DB_POOL_MAX`). */
  readonly dbPoolMax: number;
  /** Postgres `statement_timeout` in ms (`AGENTPLANE_STATEMENT_TIMEOUT_MS`). */
  readonly statementTimeoutMs: number;
  /** How long shutdown waits for requests, streams and jobs in flight (`AGENTPLANE_SHUTDOWN_GRACE_MS`). */
  readonly shutdownGraceMs: number;
  /** Log verbosity (`AGENTPLANE_LOG_LEVEL`). */
  readonly logLevel: LogLevel;
  /**
   * The graphs file (`AGENTPLANE_CONFIG`); undefined looks for agentplane.json, then langgraph.json in
   * the working directory, then serves the bundled example graph.
   */
  readonly graphConfigPath: string | undefined;
  /** Whether traces are counted into granular usage (`AGENTPLANE_USAGE_REPORTING`). */
  readonly usageReporting: boolean;
  /** Whether agent runs are recorded in the tracing store (`AGENTPLANE_RUN_TRACING`); on where unset. */
  readonly runTracing: boolean;
  /**
   * The API URL a graph's `new Client()` with no URL reaches (`AGENTPLANE_LOOPBACK_URL`); undefined
   * is this process's own address when it serves the API (role `all`).
   */
  readonly loopbackUrl: string | undefined;
  /**
   * The default config and context of the system assistants, by graph id (`LANGGRAPH_CONFIG`);
   * undefined leaves it to the graphs file's `env`.
   */
  readonly assistantDefaults: SystemAssistantDefaults | undefined;
  /** How long reading one graph's schemas from its TypeScript types may take (`LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS`). */
  readonly schemaResolveTimeoutMs: number;
  /**
   * Key that encrypts destination credentials (`AGENTPLANE_SECRET_KEY`: 64 hex digits or base64 of
   * 32 bytes); undefined keeps a generated one in `dataDir`.
   */
  readonly secretKey: string | undefined;
  /**
   * Built-in encryption at rest of agent data (`AGENTPLANE_AES_KEY`: comma-separated 32-byte keys,
   * the first encrypts and all decrypt; `AGENTPLANE_AES_JSON_KEYS`: JSON key names whose values are
   * encrypted); undefined stores agent data as given.
   */
  readonly aes: AesSettings | undefined;
  /**
   * Origins whose browser pages may call the API (`AGENTPLANE_CORS_ORIGINS`, comma-separated; `*`
   * for any, `none` for no other origin); {@link DEFAULT_CORS_ORIGINS} where unset.
   */
  readonly corsOrigins: readonly string[];
  /** Bulk export limits. */
  readonly bulkExport: BulkExportSettings;
  /** Agent run settings. */
  readonly runs: RunSettings;
  /** Run webhook delivery. */
  readonly webhooks: WebhookSettings;
  /** How custom auth users map to workspaces. */
  readonly customAuth: CustomAuthSettings;
}

/** How the graphs file's custom auth (`auth.path`) users map onto organizations, workspaces and keys. */
export interface CustomAuthSettings {
  /**
   * `allow`: a request with an agentplane API key is authenticated by the key and skips the handlers
   * (operator access); `deny`: only run tokens and Studio skip them (`AGENTPLANE_CUSTOM_AUTH_API_KEYS`).
   */
  readonly apiKeys: "allow" | "deny";
  /**
   * The workspace every custom-auth user acts in (`AGENTPLANE_CUSTOM_AUTH_WORKSPACE`); undefined:
   * the first organization's oldest workspace (the one bootstrap created).
   */
  readonly workspaceId: string | undefined;
  /** The role they act with there (`AGENTPLANE_CUSTOM_AUTH_ROLE`). */
  readonly role: "admin" | "editor" | "viewer";
}

/** Custom auth's defaults: API keys still work, custom users are editors of the default workspace. */
export const DEFAULT_CUSTOM_AUTH_SETTINGS: CustomAuthSettings = Object.freeze({
  apiKeys: "allow",
  workspaceId: undefined,
  role: "editor",
});

/**
 * The origins allowed cross-origin by default: LangGraph Studio, which runs on smith.langchain.com
 * and calls a local server from the browser. The server's own pages are same-origin and need none.
 */
export const DEFAULT_CORS_ORIGINS: readonly string[] = Object.freeze(["https://smith.langchain.com"]);

/** The seed's defaults for runs and this server's tuning. */
export const DEFAULT_RUN_SETTINGS: RunSettings = Object.freeze({
  // The reference servers run 10 jobs per worker process.
  workers: 10,
  // The JS reference server gives up after 3 attempts.
  maxAttempts: 3,
  // A heartbeat every quarter lease; a dead worker is noticed after lease + sweep interval (5 s),
  // 20 s, inside the 30 s.
  leaseSeconds: 15,
  // One hour: a long agent run, with a bound so a stuck graph cannot hold a worker slot forever.
  timeoutSeconds: 60 * 60,
  // The seed: resumable streams are kept 2 minutes.
  streamTtlSeconds: 120,
  // The seed: background grace period 3 minutes.
  shutdownGraceMs: 3 * 60 * 1000,
  richThreads: true,
});

/** Webhook delivery defaults. */
export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = Object.freeze({
  enabled: true,
  allowedHosts: Object.freeze([]) as readonly string[],
  // A user's URL must not point the server at itself or its network unless an admin says so.
  allowPrivateAddresses: false,
  headers: Object.freeze({}),
  // A receiver should acknowledge at once and work afterwards; 10 s covers a slow cold start.
  timeoutSeconds: 10,
  // Eight calls 5 s apart doubling (5, 10, 20 … 320 s, jittered up to twice that): about 10 to 20
  // minutes in all, enough to ride out a receiver's restart or deploy, bounded so a dead receiver
  // stops costing calls.
  maxAttempts: 8,
  retryDelaySeconds: 5,
});

/** The langgraph.json default: header templates read only variables starting with this. */
const DEFAULT_WEBHOOK_ENV_PREFIX = "LG_WEBHOOK_";
/** A host name or IP literal of an allow list entry, with an optional leading `*.`. */
const ALLOWED_HOST =
  /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$|^\[[0-9a-f:.]+\]$/;

/** The seed's bulk export limits and this server's tuning defaults. */
export const DEFAULT_BULK_EXPORT_SETTINGS: BulkExportSettings = Object.freeze({
  // The seed's Limits table: 20 retries 30 s apart, 4 h per run, 72 h per export, 45 runs per
  // export and 15 exports per workspace at once.
  maxRetries: 20,
  retryDelaySeconds: 30,
  runTimeoutSeconds: 4 * 60 * 60,
  exportTimeoutSeconds: 72 * 60 * 60,
  maxConcurrentRunsPerExport: 45,
  maxConcurrentExportsPerWorkspace: 15,
  // Partitions are I/O bound (Postgres reads, S3 writes) with CPU bursts to encode: four per process
  // keep two cores busy without letting one process's memory grow past a few row groups.
  workers: 4,
  // A heartbeat every quarter lease; a dead worker is noticed after lease + maintenance interval,
  // 35 s, inside the "within a minute".
  leaseSeconds: 20,
  maintenanceIntervalSeconds: 15,
  // Files of at most 250k rows or 128 MiB: big enough for analytical readers, small enough that a
  // crash redoes little.
  fileMaxRows: 250_000,
  fileMaxBytes: 128 * 1024 * 1024,
  // The server must not be pointed at itself or its network by a user's endpoint unless an admin says so.
  allowPrivateEndpoints: false,
});

/**
 * How long a graceful shutdown may take in all: the grace of requests, streams and jobs, plus, in a
 * process that executes runs, the background grace its running runs get before they are handed back
 */
export function shutdownBudgetMs(config: Config): number {
  if (config.role === "api") return config.shutdownGraceMs;
  return config.shutdownGraceMs + config.runs.shutdownGraceMs;
}

/** Thrown by {@link loadConfig} with every problem found, one per line. */
export class ConfigError extends Error {
  /** Each problem, as a sentence naming the variable and what to do. */
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/** The LangGraph ecosystem's conventional dev-server port; clients default to it. */
const DEFAULT_PORT = 2024;
/** 15 minutes: the reference server's default statement timeout (seed, Limits). */
const DEFAULT_STATEMENT_TIMEOUT_MS = 15 * 60 * 1000;
/** Postgres's default max_connections is 100; ten per process leaves room for several processes. */
const DEFAULT_POOL_MAX = 10;
/** Long enough for a typical request or job to finish, short enough for a rolling deploy. */
const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/**
 * 30 s: the LangGraph JS server's default. Reading an `Annotation` graph's types takes 5-10 s on a
 * 2-core machine when its tsconfig sets `skipLibCheck` (measured: docs/benchmarks.md, "Graph
 * schemas").
 */
const DEFAULT_SCHEMA_RESOLVE_TIMEOUT_MS = 30_000;
/** One hour: far beyond any real extraction; a bound so a typo cannot mean "never give up". */
const MAX_SCHEMA_RESOLVE_TIMEOUT_MS = 60 * 60 * 1000;
/** Shortest accepted pre-seeded API key: below 24 characters a key is guessable. */
const MIN_API_KEY_LENGTH = 24;

const ROLES: readonly ProcessRole[] = ["all", "api", "worker"];
const AUTH_MODES: readonly AuthMode[] = ["apikey", "none"];
/** The log levels, least severe first. */
export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];
const PLANS: readonly PlanTier[] = ["developer", "plus", "enterprise"];

/**
 * Reads and validates the environment. The only reader of `process.env` in the server: everything
 * else receives a {@link Config}. Throws a {@link ConfigError} listing every problem at once.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const problems: string[] = [];
  const text = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === "" ? undefined : value;
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = text(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name}=${raw} must be a whole number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = text(name);
    if (raw === undefined) return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    problems.push(`${name}=${raw} must be one of ${allowed.join(", ")}`);
    return fallback;
  };

  const host = text("AGENTPLANE_HOST") ?? "127.0.0.1";
  const auth = oneOf("AGENTPLANE_AUTH", AUTH_MODES, "apikey");
  if (auth === "none" && !isLoopback(host)) {
    problems.push(
      `AGENTPLANE_AUTH=none is refused with AGENTPLANE_HOST=${host}: it serves every caller as admin, so it is only allowed on a loopback address (127.0.0.1, ::1, localhost)`,
    );
  }
  const databaseUrl = text("DATABASE_URL");
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push("DATABASE_URL must be a postgres:// or postgresql:// URL");
  }
  const role = oneOf("AGENTPLANE_ROLE", ROLES, "all");
  const loopbackUrl = text("AGENTPLANE_LOOPBACK_URL")?.replace(/\/+$/, "");
  if (loopbackUrl !== undefined && !/^https?:\/\/[^/]+/.test(loopbackUrl)) {
    problems.push(
      `AGENTPLANE_LOOPBACK_URL=${loopbackUrl} must be an http:// or https:// URL of an API process`,
    );
  }
  if (role !== "all" && databaseUrl === undefined) {
    problems.push(
      `AGENTPLANE_ROLE=${role} splits the server across processes, which must share one database: set DATABASE_URL`,
    );
  }
  const bootstrapApiKey = text("AGENTPLANE_API_KEY");
  if (
    bootstrapApiKey !== undefined &&
    !new RegExp(`^[\\x21-\\x7e]{${MIN_API_KEY_LENGTH},256}$`).test(bootstrapApiKey)
  ) {
    problems.push(
      `AGENTPLANE_API_KEY must be ${MIN_API_KEY_LENGTH} to 256 printable characters without spaces`,
    );
  }
  let assistantDefaults: SystemAssistantDefaults | undefined;
  const langgraphConfig = text(LANGGRAPH_CONFIG);
  if (langgraphConfig !== undefined) {
    const parsed = parseSystemAssistantDefaults(langgraphConfig);
    if ("defaults" in parsed) assistantDefaults = parsed.defaults;
    else for (const problem of parsed.problems) problems.push(`${LANGGRAPH_CONFIG} ${problem}`);
  }
  const corsOrigins = parseCorsOrigins(text("AGENTPLANE_CORS_ORIGINS"), auth, problems);
  const adminEmail = text("AGENTPLANE_ADMIN_EMAIL") ?? "admin@localhost";
  if (!/^[^\s@]+@[^\s@]+$/.test(adminEmail))
    problems.push(`AGENTPLANE_ADMIN_EMAIL=${adminEmail} is not an email address`);

  const secretKey = text("AGENTPLANE_SECRET_KEY");
  if (secretKey !== undefined && !/^([0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)$/.test(secretKey))
    problems.push(
      "AGENTPLANE_SECRET_KEY must be 64 hex digits or the base64 of 32 random bytes (openssl rand -hex 32)",
    );
  const aes = parseAesSettings(text("AGENTPLANE_AES_KEY"), text("AGENTPLANE_AES_JSON_KEYS"));
  problems.push(...aes.problems);
  const d = DEFAULT_BULK_EXPORT_SETTINGS;
  const bulkExport: BulkExportSettings = Object.freeze({
    maxRetries: integer("AGENTPLANE_EXPORT_MAX_RETRIES", d.maxRetries, 0, 100),
    retryDelaySeconds: integer("AGENTPLANE_EXPORT_RETRY_DELAY_SECONDS", d.retryDelaySeconds, 0, 3600),
    // pg-boss refuses job expirations of a day or more.
    runTimeoutSeconds: integer("AGENTPLANE_EXPORT_RUN_TIMEOUT_SECONDS", d.runTimeoutSeconds, 60, 86_399),
    exportTimeoutSeconds: integer(
      "AGENTPLANE_EXPORT_TIMEOUT_SECONDS",
      d.exportTimeoutSeconds,
      60,
      30 * 86_400,
    ),
    maxConcurrentRunsPerExport: integer(
      "AGENTPLANE_EXPORT_MAX_CONCURRENT_RUNS",
      d.maxConcurrentRunsPerExport,
      1,
      1000,
    ),
    maxConcurrentExportsPerWorkspace: integer(
      "AGENTPLANE_EXPORT_MAX_CONCURRENT_EXPORTS",
      d.maxConcurrentExportsPerWorkspace,
      1,
      1000,
    ),
    workers: integer("AGENTPLANE_EXPORT_WORKERS", d.workers, 1, 64),
    leaseSeconds: integer("AGENTPLANE_EXPORT_LEASE_SECONDS", d.leaseSeconds, 2, 600),
    maintenanceIntervalSeconds: integer(
      "AGENTPLANE_EXPORT_MAINTENANCE_INTERVAL_SECONDS",
      d.maintenanceIntervalSeconds,
      1,
      600,
    ),
    fileMaxRows: integer("AGENTPLANE_EXPORT_FILE_MAX_ROWS", d.fileMaxRows, 1, 10_000_000),
    // S3 multipart allows 10,000 parts; 8 MiB parts make 80 GB the ceiling, far above 16 GiB.
    fileMaxBytes:
      integer("AGENTPLANE_EXPORT_FILE_MAX_MB", d.fileMaxBytes / 1024 / 1024, 1, 16 * 1024) * 1024 * 1024,
    allowPrivateEndpoints:
      oneOf(
        "AGENTPLANE_EXPORT_ALLOW_PRIVATE_ENDPOINTS",
        ["true", "false"],
        String(d.allowPrivateEndpoints),
      ) === "true",
  });

  const r = DEFAULT_RUN_SETTINGS;
  const runs: RunSettings = Object.freeze({
    workers: integer("AGENTPLANE_RUN_WORKERS", integer("N_JOBS_PER_WORKER", r.workers, 1, 1000), 1, 1000),
    maxAttempts: integer("AGENTPLANE_RUN_MAX_ATTEMPTS", r.maxAttempts, 1, 100),
    leaseSeconds: integer("AGENTPLANE_RUN_LEASE_SECONDS", r.leaseSeconds, 2, 600),
    // pg-boss refuses job expirations of a day or more; the run's job outlives its timeout a little.
    timeoutSeconds: integer("AGENTPLANE_RUN_TIMEOUT_SECONDS", r.timeoutSeconds, 1, 86_000),
    streamTtlSeconds: integer("AGENTPLANE_STREAM_TTL_SECONDS", r.streamTtlSeconds, 0, 7 * 86_400),
    shutdownGraceMs:
      integer("BG_JOB_SHUTDOWN_GRACE_PERIOD_SECS", r.shutdownGraceMs / 1000, 0, 24 * 3600) * 1000,
    richThreads: oneOf("FF_RICH_THREADS", ["true", "false"], "true") === "true",
  });

  const w = DEFAULT_WEBHOOK_SETTINGS;
  const allowedHosts = (text("AGENTPLANE_WEBHOOK_ALLOWED_HOSTS") ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== "");
  for (const entry of allowedHosts)
    if (!ALLOWED_HOST.test(entry))
      problems.push(
        `AGENTPLANE_WEBHOOK_ALLOWED_HOSTS entry ${entry} must be a host name (optionally *.domain) or an IP address, without scheme or port`,
      );
  let webhookHeaders: Record<string, string> = {};
  const headersText = text("AGENTPLANE_WEBHOOK_HEADERS");
  if (headersText !== undefined) {
    const parsed = parseWebhookHeaders(
      headersText,
      env,
      text("AGENTPLANE_WEBHOOK_ENV_PREFIX") ?? DEFAULT_WEBHOOK_ENV_PREFIX,
    );
    if ("headers" in parsed) webhookHeaders = parsed.headers;
    else for (const problem of parsed.problems) problems.push(`AGENTPLANE_WEBHOOK_HEADERS ${problem}`);
  }
  const webhooks: WebhookSettings = Object.freeze({
    enabled: oneOf("AGENTPLANE_DISABLE_WEBHOOKS", ["true", "false"], "false") === "false",
    allowedHosts: Object.freeze(allowedHosts),
    allowPrivateAddresses:
      oneOf(
        "AGENTPLANE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES",
        ["true", "false"],
        String(w.allowPrivateAddresses),
      ) === "true",
    headers: Object.freeze(webhookHeaders),
    // Past five minutes a call is not a webhook acknowledgement any more.
    timeoutSeconds: integer("AGENTPLANE_WEBHOOK_TIMEOUT_SECONDS", w.timeoutSeconds, 1, 300),
    // Twelve doubling delays already span hours; more would retry a receiver that is gone.
    maxAttempts: integer("AGENTPLANE_WEBHOOK_MAX_ATTEMPTS", w.maxAttempts, 1, 12),
    retryDelaySeconds: integer("AGENTPLANE_WEBHOOK_RETRY_DELAY_SECONDS", w.retryDelaySeconds, 1, 600),
  });

  const customAuthWorkspace = text("AGENTPLANE_CUSTOM_AUTH_WORKSPACE");
  if (customAuthWorkspace !== undefined && !isUuid(customAuthWorkspace))
    problems.push(`AGENTPLANE_CUSTOM_AUTH_WORKSPACE=${customAuthWorkspace} must be a workspace UUID`);
  const customAuth: CustomAuthSettings = Object.freeze({
    apiKeys: oneOf("AGENTPLANE_CUSTOM_AUTH_API_KEYS", ["allow", "deny"] as const, "allow"),
    workspaceId: customAuthWorkspace?.toLowerCase(),
    role: oneOf("AGENTPLANE_CUSTOM_AUTH_ROLE", ["admin", "editor", "viewer"] as const, "editor"),
  });

  const config: Config = Object.freeze({
    port: integer("AGENTPLANE_PORT", DEFAULT_PORT, 0, 65535),
    host,
    databaseUrl,
    dataDir: resolve(text("AGENTPLANE_DATA_DIR") ?? ".agentplane"),
    role,
    auth,
    bootstrapApiKey,
    plan: oneOf("AGENTPLANE_PLAN", PLANS, "enterprise"),
    adminEmail,
    dbPoolMax: integer("AGENTPLANE_DB_POOL_MAX", DEFAULT_POOL_MAX, 2, 1000),
    statementTimeoutMs: integer(
      "AGENTPLANE_STATEMENT_TIMEOUT_MS",
      DEFAULT_STATEMENT_TIMEOUT_MS,
      0,
      2 ** 31 - 1,
    ),
    shutdownGraceMs: integer("AGENTPLANE_SHUTDOWN_GRACE_MS", DEFAULT_SHUTDOWN_GRACE_MS, 0, 10 * 60 * 1000),
    logLevel: oneOf("AGENTPLANE_LOG_LEVEL", LOG_LEVELS, "info"),
    graphConfigPath: text("AGENTPLANE_CONFIG") && resolve(text("AGENTPLANE_CONFIG") as string),
    usageReporting: oneOf("AGENTPLANE_USAGE_REPORTING", ["true", "false"], "true") === "true",
    runTracing: oneOf("AGENTPLANE_RUN_TRACING", ["true", "false"], "true") === "true",
    loopbackUrl,
    assistantDefaults,
    schemaResolveTimeoutMs: integer(
      "LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS",
      DEFAULT_SCHEMA_RESOLVE_TIMEOUT_MS,
      1,
      MAX_SCHEMA_RESOLVE_TIMEOUT_MS,
    ),
    secretKey,
    aes: aes.settings,
    corsOrigins,
    bulkExport,
    runs,
    webhooks,
    customAuth,
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/**
 * `AGENTPLANE_CORS_ORIGINS`: `none`, `*`, or origins as browsers send them (`https://host[:port]`,
 * no path or trailing slash). `*` is refused with authentication off: any page could act as admin.
 */
function parseCorsOrigins(raw: string | undefined, auth: AuthMode, problems: string[]): readonly string[] {
  if (raw === undefined) return DEFAULT_CORS_ORIGINS;
  if (raw === "none") return Object.freeze([]);
  const origins = raw.split(",").map((origin) => origin.trim());
  for (const origin of origins) {
    if (origin === "*") {
      if (auth === "none")
        problems.push(
          "AGENTPLANE_CORS_ORIGINS=* is refused with AGENTPLANE_AUTH=none: any web page open in a browser could act as admin; list the origins that may call",
        );
    } else if (!/^https?:\/\/[^/\s,?#@]+$/.test(origin)) {
      problems.push(
        `AGENTPLANE_CORS_ORIGINS: ${origin === "" ? "an empty entry" : origin} is no origin; write scheme://host[:port] without a path, e.g. https://smith.langchain.com`,
      );
    }
  }
  return Object.freeze(origins);
}

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}
