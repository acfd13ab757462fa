import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSql } from "../../server/store/db.js";
import { startEmbeddedPostgres } from "../../server/store/postgres/embedded-postgres.js";

/** mkdtemp makes the directory 0700; as root, Postgres runs as the `postgres` user and must enter it. */
const TEMP_DIR_MODE = 0o711;

/** A throwaway embedded Postgres in a temporary directory of its own. */
export interface BenchPostgres {
  /** Connection URL of the `bench` database. */
  url: string;
  /** The temporary directory: the cluster is in its `postgres` folder; the bench may use the rest. */
  dir: string;
  /** Stops Postgres and removes the temporary directory. */
  stop(): Promise<void>;
}

/**
 * Starts an embedded Postgres (fsync and synchronous commit off, nothing kept) with a `bench` database
 * in a new temporary directory named after `bench`, its output discarded; `settings` are passed to
 * the server as `-c name=value`.
 */
export async function startBenchPostgres(
  bench: string,
  settings: Readonly<Record<string, string>> = {},
): Promise<BenchPostgres> {
  const dir = await mkdtemp(join(tmpdir(), `agentplane-bench-${bench}-`));
  const removeDir = () => rm(dir, { recursive: true, force: true });
  try {
    await chmod(dir, TEMP_DIR_MODE);
    const server = await startEmbeddedPostgres({
      dataDir: join(dir, "postgres"),
      database: "bench",
      persistent: false,
      durable: false,
      log: () => {},
      settings,
    });
    const stop = async () => {
      await server.stop();
      await removeDir();
    };
    return { url: server.url, dir, stop };
  } catch (error) {
    await removeDir();
    throw error;
  }
}

/**
 * Creates another database named `name` in the bench's cluster, for a second server of its own (a
 * baseline checkout), and returns its URL.
 */
export async function createBenchDatabase(pg: BenchPostgres, name: string): Promise<string> {
  const admin = createSql(pg.url, { max: 1, statementTimeoutMs: 0, applicationName: "bench" });
  try {
    await admin`create database ${admin(name)}`;
  } finally {
    await admin.end();
  }
  const url = new URL(pg.url);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Gathers planner statistics in the database at `url` (`ANALYZE`), as autovacuum does some time
 * after a bulk load. A bench that measures right after seeding would otherwise meet tables that
 * were never analyzed, and autovacuum would analyze one server's database in the middle of a cell
 * and not the other's: the plans, and with them a search's cost, change threefold at that moment.
 */
export async function analyzeBenchDatabase(url: string): Promise<void> {
  const admin = createSql(url, { max: 1, statementTimeoutMs: 0, applicationName: "bench-analyze" });
  try {
    await admin`analyze`;
  } finally {
    await admin.end();
  }
}
