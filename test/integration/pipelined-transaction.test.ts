/**
 * pipelinedTransaction on a real database: statements sent without waiting run in order inside one
 * transaction, a failure anywhere (before or after COMMIT was sent) leaves nothing written, and the
 * connection always goes back to the pool outside any transaction.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  pipelinedTransaction,
  StatementAfterCommitError,
} from "../../server/store/batching/pipelined-transaction.js";
import { createSql, type Queryable, type Sql } from "../../server/store/db.js";
import { createTestDatabase } from "../support/database.js";

let database: Awaited<ReturnType<typeof createTestDatabase>>;
/** One connection, so every transaction below provably reuses the one before it. */
let single: Sql;

beforeAll(async () => {
  database = await createTestDatabase();
  single = createSql(database.url, { max: 1, statementTimeoutMs: 0, applicationName: "pipelined-tx-test" });
  await database.sql`create table pipelined_rows (value text primary key)`;
});

afterAll(async () => {
  await single?.end();
  await database?.drop();
});

async function values(): Promise<string[]> {
  const rows = await single<{ value: string }[]>`select value from pipelined_rows order by value`;
  return rows.map((r) => r.value);
}

/**
 * True when the pool's one connection is inside a transaction block: two statements then share one
 * transaction id, where outside a block each is a transaction of its own. (Comparing `now()` with
 * `statement_timestamp()` in one statement is not a test: under the extended protocol they can
 * differ outside a block too.)
 */
async function inTransaction(): Promise<boolean> {
  const id = async () => (await single<{ id: string }[]>`select txid_current()::text as id`)[0]?.id;
  const first = await id();
  return first === (await id());
}

describe("pipelinedTransaction", () => {
  it("runs statements sent together in one transaction, in order, with COMMIT sent behind the last", async () => {
    const answer = await pipelinedTransaction(single, async ({ tx, commit }) => {
      const [, seen] = await Promise.all([
        tx`insert into pipelined_rows values ('a')`,
        tx<{ n: number }[]>`select count(*)::int as n from pipelined_rows where value = 'a'`,
      ]);
      // Sent (execute) before COMMIT: a statement goes out when first awaited or executed.
      const inserting = tx`insert into pipelined_rows values ('b') returning value`.execute();
      const [inserted] = await Promise.all([inserting, commit()]);
      return { seen: seen[0]?.n, inserted: inserted[0]?.value };
    });
    expect(answer).toEqual({ seen: 1, inserted: "b" });
    expect(await values()).toEqual(["a", "b"]);
    expect(await inTransaction()).toBe(false);
  });

  it("sends COMMIT behind a statement a store function awaits inside itself", async () => {
    // `await` on a query inside an async function sends it a microtask later than a direct `.then`.
    const insert = async (q: Queryable, value: string) => {
      const [row] = await q<{ xid: string }[]>`
        insert into pipelined_rows values (${value}) returning txid_current()::text as xid`;
      return row?.xid;
    };
    for (const value of ["f1", "f2", "f3"]) {
      const [begun, inserted] = await pipelinedTransaction(single, async ({ tx, commit }) => {
        const [row] = await tx<{ xid: string }[]>`select txid_current()::text as xid`;
        const [xid] = await Promise.all([insert(tx, value), commit()]);
        return [row?.xid, xid];
      });
      // One transaction: the insert ran before COMMIT, not after it on its own.
      expect(inserted).toBe(begun);
    }
    expect(await inTransaction()).toBe(false);
  });

  it("commitWith answers the last statement, run in the transaction before COMMIT", async () => {
    const [first, last] = await pipelinedTransaction(single, async ({ tx, commitWith }) => {
      const begun = tx<{ xid: string }[]>`select txid_current()::text as xid`.execute();
      const [row] = await commitWith(
        tx<
          { xid: string }[]
        >`insert into pipelined_rows values ('g') returning txid_current()::text as xid`.execute(),
      );
      return [(await begun)[0]?.xid, row?.xid];
    });
    expect(last).toBe(first);
    expect(await values()).toContain("g");
    expect(await inTransaction()).toBe(false);
  });

  it("refuses a statement sent after COMMIT went out, rather than run it outside the transaction", async () => {
    let late: Promise<unknown> | undefined;
    await pipelinedTransaction(single, async ({ tx, commit }) => {
      await tx`insert into pipelined_rows values ('h')`;
      await commit();
      // Started after COMMIT was sent: it would run in a transaction of its own.
      late = tx`insert into pipelined_rows values ('late')`.execute();
      late.catch(() => undefined);
    });
    await expect(late).rejects.toThrow(StatementAfterCommitError);
    expect(await values()).toContain("h");
    expect(await values()).not.toContain("late");
    expect(await inTransaction()).toBe(false);
  });

  it("refuses a statement a store function starts only after a turn of the event loop", async () => {
    // A store function that waits for I/O before it builds its statement breaks rule 3.
    const slowInsert = async (q: Queryable, value: string) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      await q`insert into pipelined_rows values (${value})`;
    };
    await expect(
      pipelinedTransaction(single, async ({ tx, commitWith }) => {
        await commitWith(slowInsert(tx, "slow"));
      }),
    ).rejects.toThrow(StatementAfterCommitError);
    expect(await values()).not.toContain("slow");
    expect(await inTransaction()).toBe(false);
  });

  it("commits a body that never sent COMMIT itself", async () => {
    await pipelinedTransaction(single, async ({ tx }) => {
      await tx`insert into pipelined_rows values ('c')`;
    });
    expect(await values()).toContain("c");
    expect(await inTransaction()).toBe(false);
  });

  it("rolls back everything when the statement sent with COMMIT fails, and says why", async () => {
    const failed = pipelinedTransaction(single, async ({ tx, commit }) => {
      await tx`insert into pipelined_rows values ('d')`;
      await Promise.all([tx`insert into pipelined_rows values ('a')`.execute(), commit()]);
    });
    await expect(failed).rejects.toThrow(/duplicate key/);
    expect(await values()).not.toContain("d");
    expect(await inTransaction()).toBe(false);
  });

  it("rejects a COMMIT that Postgres answered with ROLLBACK", async () => {
    let committed: unknown;
    await expect(
      pipelinedTransaction(single, async ({ tx, commit }) => {
        const inserting = tx`insert into pipelined_rows values ('a')`.execute();
        inserting.catch(() => {});
        committed = await commit().then(
          () => "committed",
          (error: Error) => error.message,
        );
      }),
    ).rejects.toThrow(/ROLLBACK/);
    expect(committed).toMatch(/not committed: Postgres answered ROLLBACK/);
    expect(await inTransaction()).toBe(false);
  });

  it("rolls back a body that throws before COMMIT, leaving the connection usable", async () => {
    await expect(
      pipelinedTransaction(single, async ({ tx }) => {
        await tx`insert into pipelined_rows values ('e')`;
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    expect(await values()).not.toContain("e");
    expect(await inTransaction()).toBe(false);
  });
});
