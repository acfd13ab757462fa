/**
 * The end of a run in one statement (server/store/agents/run-end-store.ts), on a real database: it ends
 * the run only under the attempt's lease, stores the attempt's last events before the end event,
 * saves a kept thread's state or deletes a temporary thread, names the thread's next run (seeing
 * every run created before it got the thread's queue), sent alone, fails without writing anything
 * when there is more to do, and announces with its end event what it wrote of the run when that fits
 * in a NOTIFY (migration 0038).
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { claimRun, lockThreadQueue } from "../../server/store/agents/agent-run-store.js";
import { parseRunEndAnnouncement } from "../../server/store/agents/run-end-announcement.js";
import {
  endRunWithThread,
  isRunEndNeedsMore,
  type RunEndWrite,
} from "../../server/store/agents/run-end-store.js";
import {
  END_EVENT,
  endEventData,
  eventsAfter,
  RUN_EVENTS_CHANNEL,
} from "../../server/store/agents/run-event-store.js";
import { insertThreads } from "../../server/store/agents/thread-store.js";
import type { Queryable } from "../../server/store/db.js";
import { insertTestAssistant } from "../support/assistants.js";
import { useTestDatabase } from "../support/database.js";
import { untilAdvisoryLockWaited } from "../support/lock-waits.js";
import { insertTestRun } from "../support/runs.js";
import { createTestWorkspace } from "../support/tenancy.js";

const db = useTestDatabase();
let workspaceId: string;
const assistantId = randomUUID();

beforeAll(async () => {
  const sql = db().sql;
  workspaceId = await createTestWorkspace(sql);
  await insertTestAssistant(sql, workspaceId, assistantId);
});

/** Inserts a pending run on the thread, through `q` (a transaction's, or the pool). */
function newRun(q: Queryable, threadId: string, options: { runId?: string; temporary?: boolean } = {}) {
  return insertTestRun(
    q,
    { workspaceId, assistantId, threadId },
    { ...(options.runId ? { runId: options.runId } : {}), temporary: options.temporary ?? false },
  );
}

/** A thread with `runs` runs on it, the first claimed; answers the thread and the runs' ids and token. */
async function threadWithRuns(runs: number, temporary = false) {
  const threadId = uuidv7();
  await insertThreads(db().sql, [{ workspaceId, threadId, metadata: {}, ttl: null }]);
  const runIds: string[] = [];
  for (let i = 0; i < runs; i++) runIds.push((await newRun(db().sql, threadId, { temporary })).runId);
  const leaseToken = randomUUID();
  await claimRun(db().sql, {
    workspaceId,
    threadId,
    runId: runIds[0] ?? "",
    owner: "test",
    leaseToken,
    leaseSeconds: 30,
  });
  return { threadId, runIds, leaseToken };
}

function endOf(
  target: { threadId: string; runIds: string[]; leaseToken: string },
  overrides: Partial<RunEndWrite> = {},
): RunEndWrite {
  return {
    workspaceId,
    runId: target.runIds[0] ?? "",
    threadId: target.threadId,
    leaseToken: target.leaseToken,
    status: "success",
    output: { reply: "ok" },
    eventTtlSeconds: 60,
    events: [{ ms: Date.now(), event: "values", data: '{"reply":"ok"}' }],
    endEvent: END_EVENT,
    endData: endEventData("success"),
    channel: RUN_EVENTS_CHANNEL,
    thread: { kind: "save", state: { values: { reply: "ok" }, interrupts: {} }, status: "idle", error: null },
    cipher: undefined,
    alone: false,
    ...overrides,
  };
}

/** The end, one statement in a transaction of its own, as the worker sends it when it is alone. */
function end(write: RunEndWrite) {
  return endRunWithThread(db().sql, write);
}

describe("the end of a run", () => {
  it("ends the run, stores its last events before its end event, and saves its thread's state", async () => {
    const target = await threadWithRuns(1);
    const written = await end(endOf(target));
    expect(written).toMatchObject({ threadSaved: true, threadDeleted: false, next: undefined });
    const events = await eventsAfter(db().sql, workspaceId, { runId: target.runIds[0] ?? "" }, 0, 10);
    expect(events.map((e) => e.event)).toEqual(["values", END_EVENT]);
    expect(written?.events.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    const [thread] = await db().sql<{ status: string; values: unknown }[]>`
      select status, "values" from threads where thread_id = ${target.threadId}`;
    expect(thread).toEqual({ status: "idle", values: { reply: "ok" } });
    const [run] = await db().sql<{ status: string; output: unknown }[]>`
      select status, output from agent_runs where run_id = ${target.runIds[0] ?? ""}`;
    expect(run).toEqual({ status: "success", output: { reply: "ok" } });
  });

  it("writes nothing for an attempt that no longer holds the lease", async () => {
    const target = await threadWithRuns(1);
    expect(await end(endOf(target, { leaseToken: randomUUID() }))).toBeUndefined();
    expect(await eventsAfter(db().sql, workspaceId, { runId: target.runIds[0] ?? "" }, 0, 10)).toEqual([]);
  });

  it("names the thread's next run, which keeps the thread busy", async () => {
    const target = await threadWithRuns(2);
    const written = await end(endOf(target));
    expect(written?.next?.runId).toBe(target.runIds[1]);
    const [thread] = await db().sql<
      { status: string }[]
    >`select status from threads where thread_id = ${target.threadId}`;
    expect(thread?.status).toBe("busy");
  });

  it("deletes a temporary thread with no other run, and keeps the run for wait and join", async () => {
    const target = await threadWithRuns(1, true);
    const written = await end(endOf(target, { thread: { kind: "delete" } }));
    expect(written).toMatchObject({ threadSaved: false, threadDeleted: true });
    const [thread] = await db().sql<{ n: number }[]>`
      select count(*)::int as n from threads where thread_id = ${target.threadId}`;
    expect(thread?.n).toBe(0);
    const [run] = await db().sql<{ status: string }[]>`
      select status from agent_runs where run_id = ${target.runIds[0] ?? ""}`;
    expect(run?.status).toBe("success");
  });

  it("sent alone, fails with nothing written when it has a next run to dispatch", async () => {
    const target = await threadWithRuns(2);
    const failed = await end(endOf(target, { alone: true })).catch((error: unknown) => error);
    expect(isRunEndNeedsMore(failed)).toBe(true);
    const [run] = await db().sql<{ status: string }[]>`
      select status from agent_runs where run_id = ${target.runIds[0] ?? ""}`;
    expect(run?.status).toBe("running");
    expect(await eventsAfter(db().sql, workspaceId, { runId: target.runIds[0] ?? "" }, 0, 10)).toEqual([]);
    // Sent alone with nothing more to do, it ends the run as the full end would.
    const lone = await threadWithRuns(1);
    expect(await end(endOf(lone, { alone: true }))).toMatchObject({ threadSaved: true });
  });

  it("sent alone, fails when the run's thread is gone", async () => {
    const target = await threadWithRuns(1);
    // Deleting a thread leaves its running run in place (its worker is told to stop it).
    await db().sql`delete from threads where thread_id = ${target.threadId}`;
    const [run] = await db().sql<{ n: number }[]>`
      select count(*)::int as n from agent_runs where run_id = ${target.runIds[0] ?? ""}`;
    expect(run?.n).toBe(1);
    const failed = await end(endOf(target, { alone: true })).catch((error: unknown) => error);
    expect(isRunEndNeedsMore(failed)).toBe(true);
    expect(await end(endOf(target))).toMatchObject({ threadSaved: false, threadDeleted: false });
  });

  it("locks the thread's queue before it reads it, so it sees a run created while it waited", async () => {
    const target = await threadWithRuns(1);
    const createdMeanwhile = uuidv7();
    let ending: Promise<unknown> | undefined;
    await db().sql.begin(async (tx) => {
      await lockThreadQueue(tx, workspaceId, target.threadId);
      ending = end(endOf(target));
      // The end waits for the lock this transaction holds.
      await untilAdvisoryLockWaited(db().sql);
      await newRun(tx, target.threadId, { runId: createdMeanwhile });
    });
    // Committed after the end was sent, before it got the lock: the end's snapshot has it.
    expect(await ending).toMatchObject({ next: { runId: createdMeanwhile } });
  });

  /** Ends `target` with `write`'s overrides and answers the NOTIFY of its end event. */
  async function endAnnounced(
    target: { threadId: string; runIds: string[]; leaseToken: string },
    overrides: Partial<RunEndWrite> = {},
    before?: () => Promise<unknown>,
  ): Promise<string> {
    const runId = target.runIds[0] ?? "";
    let heard: (payload: string) => void = () => {};
    const payload = new Promise<string>((resolve) => {
      heard = resolve;
    });
    const listener = await db().sql.listen(RUN_EVENTS_CHANNEL, (p) => {
      if (p.startsWith(`${runId} `) && p.includes(" end ")) heard(p);
    });
    try {
      await before?.();
      await end(endOf(target, overrides));
      return await payload;
    } finally {
      await listener.unlisten();
    }
  }

  it("announces what it wrote of the run with its end event, so a waiter elsewhere need not read it", async () => {
    const target = await threadWithRuns(1);
    const runId = target.runIds[0] ?? "";
    await db().sql`update agent_runs set cancel_action = 'interrupt', cancel_reason = 'multitask:interrupt'
      where run_id = ${runId}`;
    const payload = await endAnnounced(target, { status: "interrupted" });
    const [row] = await db().sql<
      { updated_at: Date }[]
    >`select updated_at from agent_runs where run_id = ${runId}`;
    const [seq] = await eventsAfter(db().sql, workspaceId, { runId }, 0, 10).then((rows) => rows.slice(-1));
    const prefix = `${runId} ${target.threadId} end ${seq?.seq} `;
    expect(payload.startsWith(prefix)).toBe(true);
    expect(parseRunEndAnnouncement(payload.slice(prefix.length))).toEqual({
      status: "interrupted",
      attempt: 1,
      cancelAction: "interrupt",
      cancelReason: "multitask:interrupt",
      output: { reply: "ok" },
      updatedAt: row?.updated_at,
    });
  });

  it("announces only the end's seq when the output would not fit in a NOTIFY", async () => {
    const target = await threadWithRuns(1);
    const payload = await endAnnounced(target, { output: { reply: "x".repeat(7_000) } });
    expect(payload.split(" ")).toHaveLength(4);
    // Just under the bound, the output goes with it.
    const near = await threadWithRuns(1);
    const fits = await endAnnounced(near, { output: { reply: "x".repeat(6_500) } });
    expect(parseRunEndAnnouncement(fits.split(" ").slice(4).join(" "))?.output).toEqual({
      reply: "x".repeat(6_500),
    });
  });

  it("announces only the end's seq when the run's thread is gone (the run goes with it)", async () => {
    const target = await threadWithRuns(1);
    const payload = await endAnnounced(
      target,
      {},
      () => db().sql`delete from threads where thread_id = ${target.threadId}`,
    );
    expect(payload.split(" ")).toHaveLength(4);
  });
});
