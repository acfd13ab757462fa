/**
 * Pipelined transactions: a transaction whose statements go to Postgres without waiting for the
 * answers of those before them, so a transaction of a few statements costs one or two round trips
 * instead of one per statement plus BEGIN and COMMIT.
 *
 * This module is the one place that knows the wire-order rules; callers only say which statement
 * is their last (`commitWith`). The rules, which the tests of this module check:
 * 1. Postgres runs one connection's statements in the order they were sent, each seeing what the
 *    ones before it did, so a pipeline behaves as the same statements awaited one by one; a
 *    statement that fails aborts the transaction, and every later one fails with it.
 * 2. BEGIN is sent first, with the body's first statements (in the same write).
 * 3. postgres.js sends a statement once it is first awaited (or `.execute()`d), a microtask or two
 *    later; a store function that awaits its statement inside itself sends it within the
 *    microtasks of its call. COMMIT goes out on the next turn of the event loop after `commit` is
 *    called, once every pending microtask has run: behind every statement whose sending started
 *    before `commit` was called, in the same turn, and still without a round trip of its own.
 * 4. A statement whose sending only starts after COMMIT went out is refused (it rejects, and is
 *    never sent) rather than run outside the transaction: an order bug fails loudly.
 * 5. When the body throws, the transaction is rolled back (a ROLLBACK after the COMMIT already
 *    ended it is a no-op) before the connection goes back to the pool.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Queryable, Sql } from "../db.js";

/** The transaction {@link pipelinedTransaction} hands its callback. */
export interface PipelinedTransaction {
  /** Runs statements inside the transaction, on its reserved connection. */
  tx: Queryable;
  /**
   * Sends COMMIT behind the statements already sent (rule 3), without waiting for their answers.
   * Rejects when the transaction did not commit (a statement before it failed, so Postgres
   * answered COMMIT with ROLLBACK). Calling it again answers the same promise.
   */
  commit(): Promise<void>;
  /**
   * `last`, the transaction's last statement (started just now), with COMMIT sent right behind it:
   * resolves with its answer once both are answered; rejects when either failed.
   */
  commitWith<T>(last: Promise<T>): Promise<T>;
}

/** The error of a statement sent after COMMIT (rule 4). */
export class StatementAfterCommitError extends Error {
  override readonly name = "StatementAfterCommitError";
}

/** What a statement of postgres.js is, as far as rule 4 needs: sent through its handler, or failed. */
interface SendableQuery {
  handler: (query: unknown) => void;
  reject: (error: unknown) => void;
}

function isSendableQuery(value: unknown): value is SendableQuery {
  return (
    value instanceof Promise &&
    typeof (value as Partial<SendableQuery>).handler === "function" &&
    typeof (value as Partial<SendableQuery>).reject === "function"
  );
}

/**
 * `conn` as the body sees it: every statement made on it (tagged or `unsafe`) is refused, instead
 * of sent, once `committed()` holds. A fragment (a statement interpolated into another) is never
 * sent on its own, so its guard never runs.
 */
function fenced(conn: Queryable, committed: () => boolean): Queryable {
  const fence = <T>(made: T): T => {
    if (isSendableQuery(made)) {
      const send = made.handler;
      made.handler = (query) => {
        if (committed())
          made.reject(
            new StatementAfterCommitError(
              "a statement of a pipelined transaction was sent after its COMMIT, so it would have run outside the transaction: start every statement before calling commit()",
            ),
          );
        else send(query);
      };
    }
    return made;
  };
  return new Proxy(conn, {
    apply: (target, thisArg, args) => fence(Reflect.apply(target, thisArg, args)),
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (key !== "unsafe" || typeof value !== "function") return value;
      return (...args: Parameters<Queryable["unsafe"]>) => fence(target.unsafe(...args));
    },
  });
}

/**
 * Runs `body` in a transaction on a reserved connection, pipelined (see the rules above): BEGIN
 * goes out with the body's first statements, and the body sends COMMIT behind its last one
 * ({@link PipelinedTransaction.commitWith}); a body that does not is committed after it returns.
 */
export async function pipelinedTransaction<T>(
  sql: Sql,
  body: (transaction: PipelinedTransaction) => Promise<T>,
): Promise<T> {
  const conn = await sql.reserve();
  let commitSent = false;
  try {
    // Sent, not awaited: the body's statements follow it on the wire. If it fails (the connection
    // broke), so do they; its own rejection is then the body's to surface, awaited below.
    const begun = conn`begin`.execute();
    begun.catch(() => undefined);
    const sendCommit = async (): Promise<void> => {
      commitSent = true;
      const answer = await conn`commit`;
      if (answer.command !== "COMMIT")
        throw new Error(`the transaction was not committed: Postgres answered ${answer.command}`);
    };
    let committing: Promise<void> | undefined;
    const commit = (): Promise<void> => {
      committing ??= nextTurn().then(sendCommit);
      return committing;
    };
    const commitWith = async <L>(last: Promise<L>): Promise<L> => (await Promise.all([last, commit()]))[0];
    let result: T;
    try {
      result = await body({ tx: fenced(conn, () => commitSent), commit, commitWith });
      await begun;
      // A body that did not send COMMIT has had every statement it awaited answered: no turn to wait.
      committing ??= sendCommit();
      await committing;
    } catch (error) {
      // A ROLLBACK that fails means the connection broke (porsager then discards it), which the
      // body's own error already reports.
      await conn`rollback`.catch(() => undefined);
      throw error;
    }
    return result;
  } finally {
    conn.release();
  }
}
