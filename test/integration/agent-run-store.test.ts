/**
 * The run store's guarantees, on a real database: one run per thread at a time in arrival order,
 * lease takeover after a lapse, an attempt that lost its lease can never end the run (so a run ends
 * once), cancels of pending and running runs, and stream event ids of the form `<ms>-<seq>` that a
 * Last-Event-ID (new or old form) resumes after.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { parseLastEventId } from "../../server/services/agents/run-streams.js";
import {
  cancelRuns,
  claimRun,
  finishRun,
  headOfThreadQueue,
  insertRun,
  insertRunOnNewThread,
  lockThreadQueue,
  releaseLapsedRuns,
  renewRunLease,
} from "../../server/store/agents/agent-run-store.js";
import {
  appendFirstRunEvents,
  appendRunEvents,
  END_EVENT,
  eventId,
  eventsAfter,
  expireRunEvents,
  sweepRunEvents,
} from "../../server/store/agents/run-event-store.js";
import { insertThreads } from "../../server/store/agents/thread-store.js";
import { insertTestAssistant } from "../support/assistants.js";
import { useTestDatabase } from "../support/database.js";
import { untilAdvisoryLockWaited } from "../support/lock-waits.js";
import { createTestWorkspace } from "../support/tenancy.js";

const db = useTestDatabase();
let workspaceId: string;
const assistantId = randomUUID();

beforeAll(async () => {
  const sql = db().sql;
  workspaceId = await createTestWorkspace(sql);
  await insertTestAssistant(sql, workspaceId, assistantId);
});

/** Runs of these tests are created with no key. */
const NO_CREATOR = { apiKeyId: null, userId: null };

async function newThread(): Promise<string> {
  const threadId = uuidv7();
  await insertThreads(db().sql, [{ workspaceId, threadId, metadata: {}, ttl: null }]);
  return threadId;
}

async function newRun(threadId: string, afterSeconds = 0) {
  return insertRun(
    db().sql,
    {
      workspaceId,
      runId: uuidv7(),
      threadId,
      assistantId,
      graphId: "g",
      metadata: {},
      kwargs: {},
      multitaskStrategy: "enqueue",
      temporary: false,
      afterSeconds,
      creator: NO_CREATOR,
    },
    { threadMetadata: null },
  );
}

/** Claims `runId` as `owner`, as the worker does (the claim locks the thread's queue itself). */
function claim(threadId: string, runId: string, leaseSeconds = 30) {
  return claimRun(db().sql, {
    workspaceId,
    threadId,
    runId,
    owner: "test",
    leaseToken: randomUUID(),
    leaseSeconds,
  });
}

describe("a stateless run started by its creator", () => {
  it("is inserted running, on its new busy thread, in one statement; a taken thread id inserts nothing", async () => {
    const threadId = uuidv7();
    const leaseToken = randomUUID();
    const run = {
      workspaceId,
      runId: uuidv7(),
      threadId,
      assistantId,
      graphId: "g",
      metadata: {},
      kwargs: {},
      multitaskStrategy: "enqueue" as const,
      temporary: true,
      afterSeconds: 0,
      creator: NO_CREATOR,
    };
    const owner = { owner: "test", leaseToken, leaseSeconds: 30 };
    const { inserted: stored } = await insertRunOnNewThread(
      db().sql,
      run,
      { graph_id: "g" },
      { claim: owner },
    );
    expect(stored).toMatchObject({
      runId: run.runId,
      threadId,
      status: "running",
      attempt: 1,
      temporary: true,
    });
    const [thread] = await db().sql<{ status: string; metadata: unknown }[]>`
      select status, metadata from threads where workspace_id = ${workspaceId} and thread_id = ${threadId}`;
    expect(thread).toEqual({ status: "busy", metadata: { graph_id: "g" } });
    // The claim holds: the creator ends it with its lease token, and nobody else claims it.
    expect(await claim(threadId, run.runId)).toBeUndefined();
    expect(await finishRun(db().sql, run.runId, leaseToken, { status: "success", output: {} })).toBe(true);
    const again = { ...run, runId: uuidv7() };
    await expect(insertRunOnNewThread(db().sql, again, {}, { claim: owner })).rejects.toThrow(
      "already exists",
    );
    const [count] = await db().sql<{ n: number }[]>`
      select count(*)::int as n from agent_runs where run_id = ${again.runId}`;
    expect(count?.n).toBe(0);
  });
});

describe("one run per thread, in arrival order", () => {
  it("claims only the head of a thread's queue, and the next one after it ends", async () => {
    const threadId = await newThread();
    const first = await newRun(threadId);
    const second = await newRun(threadId);
    expect(await claim(threadId, second.runId)).toBeUndefined();
    const a = await claim(threadId, first.runId);
    expect(a?.run.status).toBe("running");
    expect(a?.run.attempt).toBe(1);
    // While the first runs, the second waits, however often it is tried.
    expect(await claim(threadId, second.runId)).toBeUndefined();
    expect(await headOfThreadQueue(db().sql, workspaceId, threadId)).toBeUndefined();
    expect(await finishRun(db().sql, first.runId, a!.leaseToken, { status: "success", output: {} })).toBe(
      true,
    );
    expect((await headOfThreadQueue(db().sql, workspaceId, threadId))?.runId).toBe(second.runId);
    expect((await claim(threadId, second.runId))?.run.status).toBe("running");
  });

  it("runs on other threads start concurrently", async () => {
    const [t1, t2] = [await newThread(), await newThread()];
    const [r1, r2] = [await newRun(t1), await newRun(t2)];
    expect(await claim(t1, r1.runId)).toBeDefined();
    expect(await claim(t2, r2.runId)).toBeDefined();
  });

  it("a run with after_seconds does not start before its time, nor hold back a later due run", async () => {
    const threadId = await newThread();
    const later = await newRun(threadId, 3600);
    const now = await newRun(threadId);
    expect(await claim(threadId, later.runId)).toBeUndefined();
    expect(await claim(threadId, now.runId)).toBeDefined();
  });

  it("locks the thread's queue before it looks at it, so it sees a run ended while it waited", async () => {
    const threadId = await newThread();
    const first = await newRun(threadId);
    const second = await newRun(threadId);
    const a = await claim(threadId, first.runId);
    let claiming: ReturnType<typeof claim> | undefined;
    await db().sql.begin(async (tx) => {
      await lockThreadQueue(tx, workspaceId, threadId);
      claiming = claim(threadId, second.runId);
      // The claim waits for the lock this transaction holds.
      await untilAdvisoryLockWaited(db().sql);
      expect(await finishRun(tx, first.runId, a?.leaseToken ?? "", { status: "success", output: {} })).toBe(
        true,
      );
    });
    // The first ended after the claim was sent, before it got the lock: the claim's snapshot has it.
    expect((await claiming)?.run.status).toBe("running");
  });

  it("claims nothing when the run is on another thread than the one named", async () => {
    const threadId = await newThread();
    const run = await newRun(threadId);
    expect(await claim(await newThread(), run.runId)).toBeUndefined();
    expect((await claim(threadId, run.runId))?.run.status).toBe("running");
  });
});

describe("leases", () => {
  it("a lapsed lease puts the run back; the old attempt can neither renew nor end it; the run ends once", async () => {
    const threadId = await newThread();
    const run = await newRun(threadId);
    const dead = await claim(threadId, run.runId, 0.2);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const lapsed = await releaseLapsedRuns(db().sql, 100);
    expect(lapsed.map((r) => r.runId)).toContain(run.runId);
    const taker = await claim(threadId, run.runId);
    expect(taker?.run.attempt).toBe(2);
    expect(await renewRunLease(db().sql, run.runId, dead!.leaseToken, 30)).toBeUndefined();
    expect(await finishRun(db().sql, run.runId, dead!.leaseToken, { status: "error", output: {} })).toBe(
      false,
    );
    expect(await renewRunLease(db().sql, run.runId, taker!.leaseToken, 30)).toEqual({
      cancelAction: null,
      orphaned: false,
    });
    expect(
      await finishRun(db().sql, run.runId, taker!.leaseToken, { status: "success", output: { ok: 1 } }),
    ).toBe(true);
    expect(await finishRun(db().sql, run.runId, taker!.leaseToken, { status: "success", output: {} })).toBe(
      false,
    );
    const [row] = await db().sql`select status, output from agent_runs where run_id = ${run.runId}`;
    expect(row).toEqual({ status: "success", output: { ok: 1 } });
  });

  it("a live lease is not taken over", async () => {
    const threadId = await newThread();
    const run = await newRun(threadId);
    await claim(threadId, run.runId, 60);
    const lapsed = await releaseLapsedRuns(db().sql, 100);
    expect(lapsed.map((r) => r.runId)).not.toContain(run.runId);
  });

  it("a deleted thread orphans its running run: the heartbeat says stop", async () => {
    const threadId = await newThread();
    const run = await newRun(threadId);
    const held = await claim(threadId, run.runId);
    await db().sql`delete from threads where workspace_id = ${workspaceId} and thread_id = ${threadId}`;
    expect(await renewRunLease(db().sql, run.runId, held!.leaseToken, 30)).toEqual({
      cancelAction: null,
      orphaned: true,
    });
  });
});

describe("cancels", () => {
  it("a pending run ends interrupted at once; a running one is asked to stop at its next heartbeat", async () => {
    const threadId = await newThread();
    const running = await newRun(threadId);
    const pending = await newRun(threadId);
    const held = await claim(threadId, running.runId);
    const outcomes = await cancelRuns(
      db().sql,
      workspaceId,
      [running.runId, pending.runId],
      "interrupt",
      "cancelled",
    );
    expect(outcomes.map((o) => [o.runId, o.previous]).sort()).toEqual(
      [
        [running.runId, "running"],
        [pending.runId, "pending"],
      ].sort(),
    );
    const [p] = await db().sql`select status, cancel_reason from agent_runs where run_id = ${pending.runId}`;
    expect(p?.status).toBe("interrupted");
    expect(p?.cancel_reason).toBe("cancelled");
    expect(await renewRunLease(db().sql, running.runId, held!.leaseToken, 30)).toEqual({
      cancelAction: "interrupt",
      orphaned: false,
    });
    // A run that ended is left alone: cancelling it again changes nothing.
    expect(await cancelRuns(db().sql, workspaceId, [pending.runId], "rollback", "cancelled")).toEqual([]);
  });

  it("cancels only the workspace's own runs", async () => {
    const threadId = await newThread();
    const run = await newRun(threadId);
    expect(await cancelRuns(db().sql, uuidv7(), [run.runId], "interrupt", "cancelled")).toEqual([]);
  });
});

describe("stream events", () => {
  it("ids are <ms>-<seq>, rising; Last-Event-ID in either form resumes after that event", async () => {
    const threadId = await newThread();
    const run = await newRun(threadId);
    const target = { workspaceId, runId: run.runId, threadId };
    await appendRunEvents(db().sql, target, [
      { ms: Date.now(), event: "metadata", data: "{}" },
      { ms: Date.now(), event: "values", data: '{"a":1}' },
    ]);
    await appendRunEvents(db().sql, target, [{ ms: Date.now(), event: "values", data: '{"a":2}' }]);
    const events = await eventsAfter(db().sql, workspaceId, { runId: run.runId }, 0, 100);
    const ids = events.map(eventId);
    for (const id of ids) expect(id).toMatch(/^\d{13}-\d+$/);
    expect(events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq)].sort((a, b) => a - b));
    const second = ids[1]!;
    const after = await eventsAfter(
      db().sql,
      workspaceId,
      { runId: run.runId },
      parseLastEventId(second)!,
      100,
    );
    expect(after.map((e) => e.data)).toEqual(['{"a":2}']);
    // The old integer form names the same position.
    const seq = second.split("-")[1]!;
    expect(parseLastEventId(seq)).toBe(parseLastEventId(second));
    expect(parseLastEventId("-1")).toBe(0);
    expect(parseLastEventId(undefined)).toBeUndefined();
    expect(() => parseLastEventId("abc")).toThrow(/Last-Event-ID/);
    // Another workspace reads nothing of the run.
    expect(await eventsAfter(db().sql, uuidv7(), { runId: run.runId }, 0, 100)).toEqual([]);
  });

  it("a writer's first batch learns whether it holds the run's first events", async () => {
    const threadId = await newThread();
    const run = await newRun(threadId);
    const target = { workspaceId, runId: run.runId, threadId };
    const first = await appendFirstRunEvents(db().sql, target, [
      { ms: Date.now(), event: "metadata", data: "{}" },
      { ms: Date.now(), event: "values", data: '{"a":1}' },
    ]);
    expect(first.fromStart).toBe(true);
    expect(first.rows.map((r) => r.event)).toEqual(["metadata", "values"]);
    const stored = await eventsAfter(db().sql, workspaceId, { runId: run.runId }, 0, 100);
    expect(stored.map((e) => e.seq)).toEqual(first.rows.map((r) => r.seq));
    // A later attempt's first batch comes after these: it does not start the run's stream.
    const later = await appendFirstRunEvents(db().sql, target, [
      { ms: Date.now(), event: "metadata", data: "{}" },
    ]);
    expect(later.fromStart).toBe(false);
    // Another run's events do not count.
    const other = await newRun(threadId);
    const alone = await appendFirstRunEvents(db().sql, { ...target, runId: other.runId }, [
      { ms: Date.now(), event: "metadata", data: "{}" },
    ]);
    expect(alone.fromStart).toBe(true);
  });

  it("events are swept once their TTL has passed after the run ended", async () => {
    const threadId = await newThread();
    const run = await newRun(threadId);
    const target = { workspaceId, runId: run.runId, threadId };
    await appendRunEvents(db().sql, target, [
      { ms: Date.now(), event: "values", data: "{}" },
      { ms: Date.now(), event: END_EVENT, data: "null" },
    ]);
    await sweepRunEvents(db().sql, 1000);
    expect(await eventsAfter(db().sql, workspaceId, { runId: run.runId }, 0, 100)).toHaveLength(2);
    await expireRunEvents(db().sql, run.runId, 0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await sweepRunEvents(db().sql, 1000);
    expect(await eventsAfter(db().sql, workspaceId, { runId: run.runId }, 0, 100)).toEqual([]);
  });
});
