import type { Queryable, Sql } from "./db.js";

/** The transaction {@link pipelinedTransaction} hands its callback. */
export interface PipelinedTransaction {
  /** Runs statements inside the transaction, on its reserved connection. */
  tx: Queryable;
  /**
   * Sends COMMIT now, behind the statements already sent, without waiting for them: call it right
   * after sending the transaction's last statement, then await both. Rejects when the transaction
   * did not commit (a statement before it failed, so Postgres answered COMMIT with ROLLBACK).
   * Calling it again answers the same promise.
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
    let committing: Promise<void> | undefined;
    const commit = (): Promise<void> => {
      committing ??= conn`commit`.then((result) => {
        if (result.command !== "COMMIT")
          throw new Error(`the transaction was not committed: Postgres answered ${result.command}`);
      });
      return committing;
    };
    let result: T;
    try {
      result = await body({ tx: conn, commit });
      await begun;
      await commit();
    } catch (error) {
      await conn`rollback`.catch(() => {});
      throw error;
    }
    return result;
  } finally {
    conn.release();
  }
}
