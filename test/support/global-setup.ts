import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import type { TestProject } from "vitest/node";
import { createSql } from "../../server/store/db.js";
import { migrate } from "../../server/store/migrate.js";
import { startEmbeddedPostgres } from "../../server/store/postgres/embedded-postgres.js";

declare module "vitest" {
  interface ProvidedContext {
    /** Superuser URL of the test cluster's `postgres` maintenance database. */
    postgresAdminUrl: string;
    /** The migrated database every test database is cloned from. */
    postgresTemplateDatabase: string;
  }
}

/** Name of the migrated template database. */
const TEMPLATE_DATABASE = "agentplane_template";

/**
 * vitest global setup: starts one disposable embedded Postgres for the whole run (fsync off), migrates
 * the template database once, and provides the URLs test files need. Returns the teardown.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const root = await mkdtemp(join(tmpdir(), "agentplane-test-"));
  // mkdtemp makes the directory 0700; as root, Postgres runs as the `postgres` user and must enter it.
  await chmod(root, 0o711);
  const server = await startEmbeddedPostgres({
    dataDir: join(root, "postgres"),
    database: TEMPLATE_DATABASE,
    persistent: false,
    durable: false,
    log: () => {},
  });
  try {
    await prepareTemplate(server.url);
  } catch (error) {
    await server.stop();
    await rm(root, { recursive: true, force: true });
    throw error;
  }
  const adminUrl = new URL(server.url);
  adminUrl.pathname = "/postgres";
  project.provide("postgresAdminUrl", adminUrl.toString());
  project.provide("postgresTemplateDatabase", TEMPLATE_DATABASE);

  return async () => {
    await server.stop();
    await rm(root, { recursive: true, force: true });
  };
}

/**
 * Migrates the template, then closes every connection to it and forbids new ones: Postgres clones a
 * database only while nobody is connected to it.
 */
async function prepareTemplate(templateUrl: string): Promise<void> {
  const sql = createSql(templateUrl, {
    max: 1,
    statementTimeoutMs: 0,
    applicationName: "agentplane-test-setup",
  });
  try {
    await migrate(sql);
  } finally {
    await sql.end();
  }
  const adminUrl = new URL(templateUrl);
  adminUrl.pathname = "/postgres";
  const admin = postgres(adminUrl.toString(), { max: 1, onnotice: () => {} });
  try {
    await admin`alter database ${admin(TEMPLATE_DATABASE)} with is_template true allow_connections false`;
  } finally {
    await admin.end();
  }
}
