import { describe, expect, it } from "vitest";
import {
  ConfigError,
  DEFAULT_BULK_EXPORT_SETTINGS,
  DEFAULT_RUN_SETTINGS,
  DEFAULT_WEBHOOK_SETTINGS,
  isLoopback,
  loadConfig,
  shutdownBudgetMs,
} from "./config.js";

describe("loadConfig", () => {
  it("applies the documented defaults", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 2024,
      host: "127.0.0.1",
      databaseUrl: undefined,
      role: "all",
      auth: "apikey",
      plan: "enterprise",
      statementTimeoutMs: 15 * 60 * 1000,
      logLevel: "info",
    });
    expect(config.dataDir).toMatch(/\.agentplane$/);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("reads every variable", () => {
    const config = loadConfig({
      AGENTPLANE_PORT: "8080",
      AGENTPLANE_HOST: "0.0.0.0",
      DATABASE_URL: "postgres://u:p@db:5432/ap",
      AGENTPLANE_DATA_DIR: "/var/lib/agentplane",
      AGENTPLANE_ROLE: "worker",
      AGENTPLANE_API_KEY: "ap_pt_0123456789abcdefghijklmn",
      AGENTPLANE_PLAN: "plus",
      AGENTPLANE_ADMIN_EMAIL: "ops@example.com",
      AGENTPLANE_DB_POOL_MAX: "20",
      AGENTPLANE_STATEMENT_TIMEOUT_MS: "1000",
      AGENTPLANE_SHUTDOWN_GRACE_MS: "500",
      AGENTPLANE_LOG_LEVEL: "debug",
    });
    expect(config).toMatchObject({
      port: 8080,
      host: "0.0.0.0",
      databaseUrl: "postgres://u:p@db:5432/ap",
      dataDir: "/var/lib/agentplane",
      role: "worker",
      bootstrapApiKey: "ap_pt_0123456789abcdefghijklmn",
      plan: "plus",
      adminEmail: "ops@example.com",
      dbPoolMax: 20,
      statementTimeoutMs: 1000,
      shutdownGraceMs: 500,
      logLevel: "debug",
    });
  });

  it("lists every problem at once", () => {
    let error: unknown;
    try {
      loadConfig({
        AGENTPLANE_PORT: "http",
        AGENTPLANE_ROLE: "both",
        AGENTPLANE_PLAN: "free",
        AGENTPLANE_API_KEY: "short",
        DATABASE_URL: "mysql://x",
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(5);
    expect(problems.join("\n")).toContain("AGENTPLANE_PORT=http must be a whole number from 0 to 65535");
    expect(problems.join("\n")).toContain("AGENTPLANE_ROLE=both must be one of all, api, worker");
    expect(problems.join("\n")).toContain("AGENTPLANE_PLAN=free must be one of developer, plus, enterprise");
    expect(problems.join("\n")).toContain("AGENTPLANE_API_KEY must be 24 to 256 printable characters");
    expect(problems.join("\n")).toContain("DATABASE_URL must be a postgres://");
  });

  it("refuses AGENTPLANE_AUTH=none unless bound to loopback", () => {
    expect(loadConfig({ AGENTPLANE_AUTH: "none" }).auth).toBe("none");
    expect(loadConfig({ AGENTPLANE_AUTH: "none", AGENTPLANE_HOST: "::1" }).auth).toBe("none");
    expect(() => loadConfig({ AGENTPLANE_AUTH: "none", AGENTPLANE_HOST: "0.0.0.0" })).toThrow(
      /AGENTPLANE_AUTH=none is refused with AGENTPLANE_HOST=0.0.0.0/,
    );
  });

  it("reads the CORS origins: Studio by default, a list, none, or * while authentication is on", () => {
    expect(loadConfig({}).corsOrigins).toEqual(["https://smith.langchain.com"]);
    expect(
      loadConfig({ AGENTPLANE_CORS_ORIGINS: "https://a.example, http://localhost:5173" }).corsOrigins,
    ).toEqual(["https://a.example", "http://localhost:5173"]);
    expect(loadConfig({ AGENTPLANE_CORS_ORIGINS: "none" }).corsOrigins).toEqual([]);
    expect(loadConfig({ AGENTPLANE_CORS_ORIGINS: "*" }).corsOrigins).toEqual(["*"]);
    expect(() => loadConfig({ AGENTPLANE_CORS_ORIGINS: "*", AGENTPLANE_AUTH: "none" })).toThrow(
      /AGENTPLANE_CORS_ORIGINS=\* is refused with AGENTPLANE_AUTH=none/,
    );
    expect(() => loadConfig({ AGENTPLANE_CORS_ORIGINS: "https://a.example/app" })).toThrow(
      /https:\/\/a.example\/app is no origin; write scheme:\/\/host\[:port\] without a path/,
    );
  });

  it("reads LANGGRAPH_CONFIG as the system assistants' defaults, and the schema timeout", () => {
    const defaults = loadConfig({});
    expect(defaults.assistantDefaults).toBeUndefined();
    expect(defaults.schemaResolveTimeoutMs).toBe(30_000);
    const config = loadConfig({
      LANGGRAPH_CONFIG: '{"agent": {"configurable": {"model_name": "openai"}, "tags": ["x"]}}',
      LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: "60000",
    });
    expect(config.assistantDefaults?.get("agent")).toEqual({
      config: { configurable: { model_name: "openai" }, tags: ["x"] },
      context: { model_name: "openai" },
    });
    expect(config.schemaResolveTimeoutMs).toBe(60_000);
  });

  it("stops on a LANGGRAPH_CONFIG that is not an object of graph settings, naming the variable", () => {
    expect(() => loadConfig({ LANGGRAPH_CONFIG: "{agent: 1}" })).toThrow(
      /LANGGRAPH_CONFIG is not valid JSON: /,
    );
    expect(() => loadConfig({ LANGGRAPH_CONFIG: '{"agent": {"context": [1]}}' })).toThrow(
      /LANGGRAPH_CONFIG "agent".context must be a JSON object, got an array/,
    );
    expect(() => loadConfig({ LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS: "soon" })).toThrow(
      /LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS=soon must be a whole number from 1 to 3600000/,
    );
  });

  it("requires a shared DATABASE_URL when the roles are split", () => {
    expect(() => loadConfig({ AGENTPLANE_ROLE: "api" })).toThrow(/AGENTPLANE_ROLE=api .* set DATABASE_URL/);
    expect(loadConfig({ AGENTPLANE_ROLE: "api", DATABASE_URL: "postgres://h/db" }).role).toBe("api");
  });

  it("reads run tracing and the loopback URL, refusing a URL that is not http(s)", () => {
    expect(loadConfig({}).runTracing).toBe(true);
    expect(loadConfig({}).loopbackUrl).toBeUndefined();
    const config = loadConfig({
      AGENTPLANE_RUN_TRACING: "false",
      AGENTPLANE_LOOPBACK_URL: "http://api:8123/",
    });
    expect(config.runTracing).toBe(false);
    expect(config.loopbackUrl).toBe("http://api:8123");
    expect(() => loadConfig({ AGENTPLANE_LOOPBACK_URL: "api:8123" })).toThrow(
      /AGENTPLANE_LOOPBACK_URL=api:8123 must be an http:\/\/ or https:\/\/ URL/,
    );
    expect(() => loadConfig({ AGENTPLANE_RUN_TRACING: "no" })).toThrow(
      /AGENTPLANE_RUN_TRACING=no must be one of/,
    );
  });
});

describe("bulk export settings", () => {
  it("default to the seed's limits", () => {
    expect(loadConfig({}).bulkExport).toEqual(DEFAULT_BULK_EXPORT_SETTINGS);
    expect(DEFAULT_BULK_EXPORT_SETTINGS).toMatchObject({
      maxRetries: 20,
      retryDelaySeconds: 30,
      runTimeoutSeconds: 4 * 3600,
      exportTimeoutSeconds: 72 * 3600,
      maxConcurrentRunsPerExport: 45,
      maxConcurrentExportsPerWorkspace: 15,
    });
    expect(loadConfig({}).secretKey).toBeUndefined();
  });

  it("reads every variable", () => {
    const key = "ab".repeat(32);
    const config = loadConfig({
      AGENTPLANE_SECRET_KEY: key,
      AGENTPLANE_EXPORT_MAX_RETRIES: "3",
      AGENTPLANE_EXPORT_RETRY_DELAY_SECONDS: "5",
      AGENTPLANE_EXPORT_RUN_TIMEOUT_SECONDS: "600",
      AGENTPLANE_EXPORT_TIMEOUT_SECONDS: "3600",
      AGENTPLANE_EXPORT_MAX_CONCURRENT_RUNS: "5",
      AGENTPLANE_EXPORT_MAX_CONCURRENT_EXPORTS: "3",
      AGENTPLANE_EXPORT_WORKERS: "2",
      AGENTPLANE_EXPORT_LEASE_SECONDS: "10",
      AGENTPLANE_EXPORT_MAINTENANCE_INTERVAL_SECONDS: "5",
      AGENTPLANE_EXPORT_FILE_MAX_ROWS: "1000",
      AGENTPLANE_EXPORT_FILE_MAX_MB: "64",
      AGENTPLANE_EXPORT_ALLOW_PRIVATE_ENDPOINTS: "true",
    });
    expect(config.secretKey).toBe(key);
    expect(config.bulkExport).toEqual({
      maxRetries: 3,
      retryDelaySeconds: 5,
      runTimeoutSeconds: 600,
      exportTimeoutSeconds: 3600,
      maxConcurrentRunsPerExport: 5,
      maxConcurrentExportsPerWorkspace: 3,
      workers: 2,
      leaseSeconds: 10,
      maintenanceIntervalSeconds: 5,
      fileMaxRows: 1000,
      fileMaxBytes: 64 * 1024 * 1024,
      allowPrivateEndpoints: true,
    });
  });

  it("refuses a secret key that is not 32 bytes and a run timeout pg-boss cannot keep", () => {
    expect(() => loadConfig({ AGENTPLANE_SECRET_KEY: "password" })).toThrow(
      "AGENTPLANE_SECRET_KEY must be 64 hex digits",
    );
    expect(() => loadConfig({ AGENTPLANE_EXPORT_RUN_TIMEOUT_SECONDS: "86400" })).toThrow(
      "AGENTPLANE_EXPORT_RUN_TIMEOUT_SECONDS=86400 must be a whole number from 60 to 86399",
    );
  });
});

describe("run settings", () => {
  it("default to the seed's limits", () => {
    expect(loadConfig({}).runs).toEqual(DEFAULT_RUN_SETTINGS);
    expect(DEFAULT_RUN_SETTINGS).toMatchObject({
      workers: 10,
      streamTtlSeconds: 120,
      shutdownGraceMs: 180_000,
    });
  });

  it("reads every variable", () => {
    const config = loadConfig({
      AGENTPLANE_RUN_WORKERS: "4",
      AGENTPLANE_RUN_MAX_ATTEMPTS: "5",
      AGENTPLANE_RUN_LEASE_SECONDS: "6",
      AGENTPLANE_RUN_TIMEOUT_SECONDS: "60",
      AGENTPLANE_STREAM_TTL_SECONDS: "30",
      BG_JOB_SHUTDOWN_GRACE_PERIOD_SECS: "7",
      FF_RICH_THREADS: "false",
    });
    expect(config.runs).toEqual({
      workers: 4,
      maxAttempts: 5,
      leaseSeconds: 6,
      timeoutSeconds: 60,
      streamTtlSeconds: 30,
      shutdownGraceMs: 7000,
      richThreads: false,
    });
    expect(loadConfig({ N_JOBS_PER_WORKER: "3" }).runs?.workers).toBe(3);
  });

  it("refuses values out of range, naming the variable", () => {
    expect(() => loadConfig({ AGENTPLANE_RUN_WORKERS: "0" })).toThrow(
      "AGENTPLANE_RUN_WORKERS=0 must be a whole number",
    );
    expect(() => loadConfig({ FF_RICH_THREADS: "no" })).toThrow(
      "FF_RICH_THREADS=no must be one of true, false",
    );
  });

  it("a worker's shutdown budget adds the runs' background grace; an API process's does not", () => {
    const env = { AGENTPLANE_SHUTDOWN_GRACE_MS: "1000", BG_JOB_SHUTDOWN_GRACE_PERIOD_SECS: "2" };
    expect(shutdownBudgetMs(loadConfig(env))).toBe(3000);
    const api = loadConfig({ ...env, AGENTPLANE_ROLE: "api", DATABASE_URL: "postgres://h/db" });
    expect(shutdownBudgetMs(api)).toBe(1000);
  });
});

describe("webhook settings", () => {
  it("default to delivery on, public hosts only, no headers", () => {
    expect(loadConfig({}).webhooks).toEqual(DEFAULT_WEBHOOK_SETTINGS);
    expect(DEFAULT_WEBHOOK_SETTINGS).toMatchObject({
      enabled: true,
      allowedHosts: [],
      allowPrivateAddresses: false,
      headers: {},
    });
  });

  it("reads every variable, filling header templates from the prefixed environment", () => {
    const config = loadConfig({
      AGENTPLANE_DISABLE_WEBHOOKS: "true",
      AGENTPLANE_WEBHOOK_ALLOWED_HOSTS: " Hooks.Example.com, *.corp.example ,[::1]",
      AGENTPLANE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "true",
      AGENTPLANE_WEBHOOK_HEADERS: JSON.stringify({
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the header template syntax
        Authorization: "Bearer ${{ env.LG_WEBHOOK_TOKEN }}",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the header template syntax
        "X-Pair": "${{env.LG_WEBHOOK_A}}-${{ env.LG_WEBHOOK_B }}",
        "X-Static": "plain",
      }),
      LG_WEBHOOK_TOKEN: "secret",
      LG_WEBHOOK_A: "a",
      LG_WEBHOOK_B: "b",
      AGENTPLANE_WEBHOOK_TIMEOUT_SECONDS: "3",
      AGENTPLANE_WEBHOOK_MAX_ATTEMPTS: "4",
      AGENTPLANE_WEBHOOK_RETRY_DELAY_SECONDS: "2",
    });
    expect(config.webhooks).toEqual({
      enabled: false,
      allowedHosts: ["hooks.example.com", "*.corp.example", "[::1]"],
      allowPrivateAddresses: true,
      headers: { Authorization: "Bearer secret", "X-Pair": "a-b", "X-Static": "plain" },
      timeoutSeconds: 3,
      maxAttempts: 4,
      retryDelaySeconds: 2,
    });
    const prefixed = loadConfig({
      AGENTPLANE_WEBHOOK_ENV_PREFIX: "HOOK_",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the header template syntax
      AGENTPLANE_WEBHOOK_HEADERS: '{"X-Key": "${{ env.HOOK_KEY }}"}',
      HOOK_KEY: "k",
    });
    expect(prefixed.webhooks?.headers).toEqual({ "X-Key": "k" });
  });

  it("refuses bad headers, hosts and numbers, naming each problem", () => {
    let error: unknown;
    try {
      loadConfig({
        AGENTPLANE_WEBHOOK_HEADERS: JSON.stringify({
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the header template syntax
          "X-Db": "${{ env.DATABASE_URL }}",
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the header template syntax
          "X-Missing": "${{ env.LG_WEBHOOK_UNSET }}",
          "Bad Name": "x",
          "Content-Length": "1",
          "X-Number": 5,
        }),
        AGENTPLANE_WEBHOOK_ALLOWED_HOSTS: "https://hooks.example.com",
        AGENTPLANE_WEBHOOK_MAX_ATTEMPTS: "0",
        AGENTPLANE_DISABLE_WEBHOOKS: "yes",
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      "AGENTPLANE_WEBHOOK_ALLOWED_HOSTS entry https://hooks.example.com must be a host name (optionally *.domain) or an IP address, without scheme or port",
      "AGENTPLANE_WEBHOOK_HEADERS header X-Db reads DATABASE_URL, but header templates may only read variables starting with LG_WEBHOOK_",
      "AGENTPLANE_WEBHOOK_HEADERS header X-Missing reads LG_WEBHOOK_UNSET, which is not set",
      'AGENTPLANE_WEBHOOK_HEADERS header name "Bad Name" is not a valid HTTP header name',
      "AGENTPLANE_WEBHOOK_HEADERS header Content-Length is set by the HTTP client itself and cannot be configured",
      "AGENTPLANE_WEBHOOK_HEADERS header X-Number must have a string value",
      "AGENTPLANE_DISABLE_WEBHOOKS=yes must be one of true, false",
      "AGENTPLANE_WEBHOOK_MAX_ATTEMPTS=0 must be a whole number from 1 to 12",
    ]);
    expect(() => loadConfig({ AGENTPLANE_WEBHOOK_HEADERS: "[1]" })).toThrow(
      "AGENTPLANE_WEBHOOK_HEADERS must be a JSON object of header name",
    );
  });
});

describe("isLoopback", () => {
  it("recognises loopback addresses only", () => {
    expect(["127.0.0.1", "127.1.2.3", "::1", "localhost"].every(isLoopback)).toBe(true);
    expect(["0.0.0.0", "10.0.0.1", "::", "example.com"].some(isLoopback)).toBe(false);
  });
});
