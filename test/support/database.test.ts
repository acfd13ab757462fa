import postgres from "postgres";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createSql } from "../../server/store/db.js";
import { loadMigrations, type Migration, migrate } from "../../server/store/migrate.js";
import { createTestDatabase, type TestDatabase, useTestDatabase } from "./database.js";

/** Tables the migrations leave behind: every `create table` not dropped by a later migration. */
function tablesCreatedBy(migrations: Migration[]): string[] {
  const tables = new Set<string>();
  for (const { script } of migrations) {
    for (const [, name = ""] of script.matchAll(/create table (?:if not exists )?([a-z_][a-z0-9_]*)/gi)) {
      tables.add(name);
    }
    for (const [, name = ""] of script.matchAll(/drop table (?:if exists )?([a-z_][a-z0-9_]*)/gi)) {
      tables.delete(name);
    }
  }
  return [...tables];
}

describe("test databases", () => {
  const db = useTestDatabase();
  const extra: TestDatabase[] = [];
  afterAll(async () => {
    await Promise.all(extra.map((d) => d.drop()));
  });

  it("are clones of the migrated template", async () => {
    const migrations = await loadMigrations();
    const { sql } = db();
    const applied = await sql`select version, name from agentplane_migrations order by version`;
    expect(applied.map((r) => ({ version: r.version, name: r.name }))).toEqual(
      migrations.map((m) => ({ version: m.version, name: m.name })),
    );
    const tables = tablesCreatedBy(migrations);
    expect(tables.length).toBeGreaterThan(0);
    const found = await sql<{ name: string }[]>`
      select table_name as name from information_schema.tables
      where table_schema = 'public' and table_name = any(${tables})`;
    expect(found.map((r) => r.name).sort()).toEqual([...tables].sort());
  });

  it("come from a template nobody can connect to, so cloning never fails on a stray session", async () => {
    const admin = postgres(inject("postgresAdminUrl"), { max: 1, onnotice: () => {} });
    try {
      const [template] = await admin`
        select datistemplate, datallowconn from pg_database where datname = ${inject("postgresTemplateDatabase")}`;
      expect(template).toEqual({ datistemplate: true, datallowconn: false });
    } finally {
      await admin.end();
    }
  });

  it("are isolated from each other", async () => {
    const other = await createTestDatabase();
    extra.push(other);
    expect(other.name).not.toBe(db().name);
    await db().sql`create table isolation_probe (v text)`;
    await db().sql`insert into isolation_probe values ('mine')`;
    const [probe] = await other.sql`select to_regclass('isolation_probe') as found`;
    expect(probe?.found).toBeNull();
  });

  it("are gone after drop(), even with a connection still open", async () => {
    const doomed = await createTestDatabase();
    const straggler = postgres(doomed.url, { max: 1, onnotice: () => {} });
    await straggler`select 1`;
    await doomed.drop();
    const admin = postgres(inject("postgresAdminUrl"), { max: 1, onnotice: () => {} });
    try {
      expect(await admin`select 1 from pg_database where datname = ${doomed.name}`).toHaveLength(0);
    } finally {
      await admin.end();
      await straggler.end({ timeout: 0 });
    }
  });
});

describe("migrate()", () => {
  it("does nothing on an already migrated database", async () => {
    const db = await createTestDatabase();
    try {
      expect(await migrate(db.sql)).toEqual([]);
      expect(await migrate(db.sql)).toEqual([]);
    } finally {
      await db.drop();
    }
  });

  it("applies every migration to an empty database once, however many processes race", async () => {
    const db = await createTestDatabase({ migrated: false });
    // Two pools stand for two processes. The first migration sleeps to hold the race window open; run
    // twice, its `create table` would fail with "already exists".
    const migrations: Migration[] = [
      { version: 1, name: "0001-first.sql", script: "create table race_one (id int); select pg_sleep(0.3);" },
      { version: 2, name: "0002-second.sql", script: "create table race_two (id int);" },
    ];
    const second = createSql(db.url, {
      max: 1,
      statementTimeoutMs: 0,
      applicationName: "agentplane-test-race",
    });
    try {
      const results = await Promise.all([migrate(db.sql, migrations), migrate(second, migrations)]);
      expect(results.flat().sort()).toEqual(["0001-first.sql", "0002-second.sql"]);
      expect(results).toContainEqual([]);
      const rows = await db.sql`select version from agentplane_migrations order by version`;
      expect(rows.map((r) => r.version)).toEqual([1, 2]);
      expect(await migrate(second, migrations)).toEqual([]);
    } finally {
      await second.end();
      await db.drop();
    }
  });

  it("applies the real migrations to an empty database and records them", async () => {
    const db = await createTestDatabase({ migrated: false });
    try {
      const names = (await loadMigrations()).map((m) => m.name);
      expect(await migrate(db.sql)).toEqual(names);
      expect(await migrate(db.sql)).toEqual([]);
    } finally {
      await db.drop();
    }
  });
});
