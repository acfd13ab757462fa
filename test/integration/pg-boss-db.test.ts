import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgBossDb, createTransactionPgBossDb } from "../../server/jobs/pg-boss-db.js";
import { createSql, type Sql } from "../../server/store/db.js";
import { createTestDatabase } from "../support/database.js";

let database: Awaited<ReturnType<typeof createTestDatabase>>;
/** One connection, so every query below provably reuses the connection a script ran on. */
let single: Sql;
/** pg-boss runs its scripts with no values at all, although its types declare them. */
const NO_VALUES = undefined as unknown as unknown[];

beforeAll(async () => {
  database = await createTestDatabase();
  single = createSql(database.url, { max: 1, statementTimeoutMs: 0, applicationName: "pg-boss-db-test" });
  await database.sql`create table boss_db_rows (value text)`;
});

afterAll(async () => {
  await single?.end();
  await database?.drop();
});

describe("createPgBossDb", () => {
  it("maps undefined parameters to null", async () => {
    const db = createPgBossDb(single);
    const { rows } = await db.executeSql("select $1::text is null as missing, $2::int as n", [undefined, 7]);
    expect(rows).toEqual([{ missing: true, n: 7 }]);
  });

  it("runs a BEGIN/COMMIT script and answers the rows of its last statement", async () => {
    const db = createPgBossDb(single);
    const { rows } = await db.executeSql(
      "begin; insert into boss_db_rows values ('script'); commit; select value from boss_db_rows",
      NO_VALUES,
    );
    expect(rows).toEqual([{ value: "script" }]);
  });

  it("rolls back a failed script so the connection returns to the pool usable", async () => {
    const db = createPgBossDb(single);
    await expect(
      db.executeSql("begin; insert into boss_db_rows values ('lost'); select 1 / 0; commit;", NO_VALUES),
    ).rejects.toThrow("division by zero");
    // On a connection left in the aborted transaction, this query would fail instead.
    const rows = await single`select count(*)::int as lost from boss_db_rows where value = 'lost'`;
    expect(rows).toEqual([{ lost: 0 }]);
  });
});

describe("createTransactionPgBossDb", () => {
  it("writes inside the caller's transaction, so a rollback undoes it", async () => {
    await expect(
      database.sql.begin(async (tx) => {
        await createTransactionPgBossDb(tx).executeSql("insert into boss_db_rows values ($1)", ["in-tx"]);
        const seen = await tx`select count(*)::int as count from boss_db_rows where value = 'in-tx'`;
        expect(seen[0]?.count).toBe(1);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    const after = await database.sql`select count(*)::int as count from boss_db_rows where value = 'in-tx'`;
    expect(after[0]?.count).toBe(0);
  });
});
