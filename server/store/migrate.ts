import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { Sql } from "./db.js";

/** Folder of the numbered migrations, `NNNN-purpose.sql`, applied in order. */
const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations/", import.meta.url));

/**
 * Key of the session advisory lock held while migrating, so that processes starting together against
 * one database apply each migration exactly once. Any constant works; this one spells "agentpln".
 */
const MIGRATION_LOCK_KEY = 0x6167656e74706c6en;

/** A migration file. */
export interface Migration {
  /** The number at the start of the file name. */
  version: number;
  /** The file name. */
  name: string;
  /** The SQL script. */
  script: string;
}

/** Reads the migration files in version order; fails on a malformed name or a duplicate number. */
export async function loadMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".sql")).sort();
  const migrations: Migration[] = [];
  for (const name of files) {
    const match = /^(\d{4})-[a-z0-9-]+\.sql$/.exec(name);
    if (!match) throw new Error(`migration file ${name} must be named NNNN-purpose.sql`);
    const version = Number(match[1]);
    if (migrations.some((m) => m.version === version))
      throw new Error(`two migrations are numbered ${version}`);
    migrations.push({ version, name, script: await readFile(`${dir}/${name}`, "utf8") });
  }
  return migrations;
}

/**
 * Applies the migrations not yet recorded in `agentplane_migrations`, each in its own transaction,
 * under an advisory lock. Returns the names of the migrations it applied.
 */
export async function migrate(sql: Sql, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  const conn = await sql.reserve();
  const applied: string[] = [];
  try {
    await conn`select pg_advisory_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
    try {
      await conn`create table if not exists agentplane_migrations (
        version integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`;
      const done = new Set(
        (await conn`select version from agentplane_migrations`).map((r) => r.version as number),
      );
      for (const m of all) {
        if (done.has(m.version)) continue;
        await conn.unsafe("begin");
        try {
          await conn.unsafe(m.script).simple();
          await conn`insert into agentplane_migrations (version, name) values (${m.version}, ${m.name})`;
          await conn.unsafe("commit");
        } catch (error) {
          await conn.unsafe("rollback");
          throw new Error(`migration ${m.name} failed: ${(error as Error).message}`, { cause: error });
        }
        applied.push(m.name);
      }
    } finally {
      await conn`select pg_advisory_unlock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
    }
  } finally {
    conn.release();
  }
  return applied;
}
