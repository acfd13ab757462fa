import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import { installQueryContextTags } from "../patches/postgres-query-context-tags.js";
import type { CustomEncryptionModule } from "../runtime/custom-encryption-module.js";
import { bootstrapIam } from "../services/iam/bootstrap.js";
import { createDatabaseGate, type DatabaseGate } from "../services/system/database-gate.js";
import { createCustomDataCipher } from "../store/crypto/custom-data-cipher.js";
import { currentEncryptionContext } from "../store/crypto/encryption-scope.js";
import { createAesDataCipher } from "../store/crypto/stored-data-cipher.js";
import { createSql, type Sql } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import { startEmbeddedPostgres } from "../store/postgres/embedded-postgres.js";
import type { ShutdownSteps } from "./shutdown-steps.js";

/** Seconds the pool waits at shutdown for queries still running after the drain. */
const POOL_END_SECONDS = 5;

/** Postgres, migrated, and the pool every later stage queries through. */
export interface Database {
  readonly sql: Sql;
  /** The Postgres URL in use (embedded or DATABASE_URL). */
  readonly databaseUrl: string;
  /** The pool's `application_name`, unique per instance (the metrics count its connections by it). */
  readonly applicationName: string;
  /** Open while Postgres answers; the dependency monitor sets it. */
  readonly gate: DatabaseGate;
}

/**
 * Stage 1: the data directory, embedded Postgres unless a URL is configured, the pool (encrypting
 * with the built-in or the graphs file's cipher), migrations, and the IAM bootstrap.
 */
export async function startDatabase(
  config: Config,
  log: Logger,
  steps: ShutdownSteps,
  customEncryption: CustomEncryptionModule | undefined,
): Promise<Database> {
  // Traversable but not listable by others: embedded Postgres runs as the `postgres` OS user when
  // started as root and must reach the cluster below; the secrets in here are files of mode 0600.
  await mkdir(config.dataDir, { recursive: true, mode: 0o711 });
  let databaseUrl = config.databaseUrl;
  if (databaseUrl === undefined) {
    const embedded = await startEmbeddedPostgres({
      dataDir: join(config.dataDir, "postgres"),
      log: (line) => log.debug(line, { source: "postgres" }),
      lifecycle: log,
    });
    steps.onStop("embedded Postgres", () => embedded.stop());
    databaseUrl = embedded.url;
    log.info("started embedded Postgres", { dataDir: join(config.dataDir, "postgres") });
  }
  const applicationName = `agentplane-${config.role}-${randomUUID().slice(0, 8)}`;
  const sql = createSql(databaseUrl, {
    max: config.dbPoolMax,
    statementTimeoutMs: config.statementTimeoutMs,
    applicationName,
    cipher: config.aes
      ? createAesDataCipher(config.aes)
      : customEncryption && createCustomDataCipher(customEncryption, log),
  });
  if (customEncryption) installQueryContextTags(sql, currentEncryptionContext);
  const gate = createDatabaseGate();
  // Queries still running after the drain get a few seconds; during an outage nothing will finish.
  steps.onStop("database pool", () => sql.end({ timeout: gate.open() ? POOL_END_SECONDS : 0 }));
  const applied = await migrate(sql);
  if (applied.length > 0) log.info("applied migrations", { applied });
  if (config.role !== "worker") await bootstrapIam(sql, config, log);
  if (config.auth === "none" && config.role !== "worker")
    log.warn(
      "authentication is off (AGENTPLANE_AUTH=none): every caller that reaches this port acts as admin of the default workspace; browser pages may call only from AGENTPLANE_CORS_ORIGINS",
      { corsOrigins: config.corsOrigins },
    );
  return { sql, databaseUrl, applicationName, gate };
}
