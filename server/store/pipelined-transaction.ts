import { setImmediate as nextTurn } from "node:timers/promises";
import type { Queryable, Sql } from "./db.js";

/** The transaction {@link pipelinedTransaction} hands its callback. */
export interface PipelinedTransaction {
  /** Runs statements inside the transaction, on its reserved connection. */
  tx: Queryable;
  /**
   * Sends COMMIT behind the statements already sent, without waiting for their answers: call it
   * right after starting the transaction's last statement, then await both. Rejects when the
   * transaction did not commit (a statement before it failed, so Postgres answered COMMIT with
   * ROLLBACK). Calling it again answers the same promise.
   *
   * A statement is sent when it is first awaited (or executed), and `await` on a postgres.js query
   * inside an async function reaches it only a microtask or two later; so COMMIT goes out on the
   * next turn of the event loop, once every pending microtask has run: behind any statement a
   * store function started before `commit` was called, and still without a round trip.
   */
  commit(): Promise<void>;
}

/**
 * Runs `body` in a transaction on a reserved connection, saving the two round trips `sql.begin`
 * spends waiting on BEGIN and on COMMIT alone: BEGIN goes out with the body's first statements,
 * and the body sends COMMIT behind its last one ({@link PipelinedTransaction.commit}); a body that
 * does not is committed after it returns. Postgres runs one connection's statements in the order
 * sent, each seeing what the ones before it did, so a pipeline behaves as the same statements
 * awaited one by one. When `body` throws, the transaction is rolled back (a ROLLBACK after the
 * COMMIT already ended it is a no-op) before the connection goes back to the pool.
 */
export async function pipelinedTransaction<T>(
  sql: Sql,
  body: (transaction: PipelinedTransaction) => Promise<T>,
): Promise<T> {
  const conn = await sql.reserve();
  try {
    // Sent, not awaited: the body's statements follow it on the wire. If it fails (the connection
    // broke), so do they; its own rejection is then the body's to surface.
    const begun = conn`begin`.execute();
    begun.catch(() => {});
    const sendCommit = async (): Promise<void> => {
      const answer = await conn`commit`;
      if (answer.command !== "COMMIT")
        throw new Error(`the transaction was not committed: Postgres answered ${answer.command}`);
    };
    let committing: Promise<void> | undefined;
    const commit = (): Promise<void> => {
      committing ??= nextTurn().then(sendCommit);
      return committing;
    };
    let result: T;
    try {
      result = await body({ tx: conn, commit });
      await begun;
      // A body that did not send COMMIT has had every statement it awaited answered: no turn to wait.
      committing ??= sendCommit();
      await committing;
    } catch (error) {
      await conn`rollback`.catch(() => {});
      throw error;
    }
    return result;
  } finally {
    conn.release();
  }
}
