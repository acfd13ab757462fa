/**
 * The fast path of a run on an existing thread (services/agents/quiet-thread-start.ts, migration
 * 0037): on a quiet thread the run is inserted claimed under the slot's lease in one statement; a
 * thread that is missing, has a config of its own or a pending or running run gets nothing written
 * and the slot back; the statement locks the thread's queue before it looks, so it sees a run
 * created while it waited for the lock; a run made from a kept assistant that changed writes nothing
 * and the kept record is forgotten.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import type { LocalRuns, RunSlot } from "../../server/jobs/agent-run-job.js";
import { createRunSlots } from "../../server/jobs/run-slots.js";
import { startOnQuietThread } from "../../server/services/agents/quiet-thread-start.js";
import { createRunAssistantCache } from "../../server/services/agents/run-assistant-cache.js";
import type { RunRequest } from "../../server/services/agents/run-requests.js";
import { insertRun, lockThreadQueue, type RunClaim } from "../../server/store/agents/agent-run-store.js";
import { findVersionedAssistant } from "../../server/store/agents/assistant-store.js";
import { startRunOnQuietThread } from "../../server/store/agents/thread-run-start-store.js";
import { insertThreads } from "../../server/store/agents/thread-store.js";
import type { Queryable } from "../../server/store/db.js";
import type { JsonObject } from "../../server/store/json-value.js";
import { insertTestAssistant } from "../support/assistants.js";
import { useTestDatabase } from "../support/database.js";
import { untilAdvisoryLockWaited } from "../support/lock-waits.js";
import { testRunRequest } from "../support/run-request.js";
import { createTestWorkspace } from "../support/tenancy.js";

const db = useTestDatabase();
let workspaceId: string;
const assistantId = randomUUID();
const creator = { apiKeyId: null, userId: null };
const claim = () => ({ owner: "quiet-thread-test", leaseToken: randomUUID(), leaseSeconds: 15 });

beforeAll(async () => {
  const sql = db().sql;
  workspaceId = await createTestWorkspace(sql);
  await insertTestAssistant(sql, workspaceId, assistantId, { configurable: { from: "assistant" } });
});

/** A new thread (with `config` as its own config); answers its id. */
async function newThread(config: JsonObject = {}): Promise<string> {
  const threadId = uuidv7();
  await insertThreads(db().sql, [{ workspaceId, threadId, metadata: { kept: true }, ttl: null }]);
  if (Object.keys(config).length > 0)
    await db().sql`update threads set config = ${db().sql.json(config)} where thread_id = ${threadId}`;
  return threadId;
}

/** A run of the test's assistant on `threadId`, as the store takes it. */
function runOn(threadId: string) {
  return {
    workspaceId,
    runId: uuidv7(),
    threadId,
    assistantId,
    graphId: "g",
    metadata: {},
    kwargs: { input: {} },
    multitaskStrategy: "enqueue" as const,
    temporary: false,
    afterSeconds: 0,
    creator,
  };
}

/** Inserts a pending run on the thread through `q`; answers its id. */
async function pendingRun(q: Queryable, threadId: string): Promise<string> {
  return (await insertRun(q, runOn(threadId), { threadMetadata: null })).runId;
}

/** The runs of a thread, oldest first. */
function runsOf(threadId: string) {
  return db().sql<{ run_id: string; status: string; attempt: number; lease_owner: string | null }[]>`
    select run_id, status, attempt, lease_owner from agent_runs where thread_id = ${threadId} order by run_id`;
}

describe("the quiet thread's start statement", () => {
  it("inserts the run running under the lease, its first attempt, and marks the thread busy", async () => {
    const threadId = await newThread();
    const run = runOn(threadId);
    const lease = claim();
    const result = await startRunOnQuietThread(db().sql, run, {
      claim: lease,
      threadMetadata: { graph_id: "g" },
      assistantRowVersion: undefined,
    });
    expect(result.started).toMatchObject({ runId: run.runId, status: "running", attempt: 1 });
    expect(await runsOf(threadId)).toEqual([
      { run_id: run.runId, status: "running", attempt: 1, lease_owner: "quiet-thread-test" },
    ]);
    const [thread] = await db().sql<{ status: string; metadata: unknown }[]>`
      select status, metadata from threads where thread_id = ${threadId}`;
    expect(thread).toEqual({ status: "busy", metadata: { kept: true, graph_id: "g" } });
  });

  it("writes nothing on a thread with a pending run, a config of its own, or none at all", async () => {
    const busy = await newThread();
    const ahead = await pendingRun(db().sql, busy);
    const configured = await newThread({ configurable: { from: "thread" } });
    const missing = uuidv7();
    for (const threadId of [busy, configured, missing]) {
      const result = await startRunOnQuietThread(db().sql, runOn(threadId), {
        claim: claim(),
        threadMetadata: null,
        assistantRowVersion: undefined,
      });
      expect(result).toEqual({ started: undefined, notQuiet: true });
    }
    expect((await runsOf(busy)).map((r) => r.run_id)).toEqual([ahead]);
    expect(await runsOf(configured)).toEqual([]);
    expect(await runsOf(missing)).toEqual([]);
  });

  it("locks the thread's queue before it looks, so it sees a run created while it waited", async () => {
    const threadId = await newThread();
    let starting: Promise<unknown> | undefined;
    let createdMeanwhile = "";
    await db().sql.begin(async (tx) => {
      await lockThreadQueue(tx, workspaceId, threadId);
      starting = startRunOnQuietThread(db().sql, runOn(threadId), {
        claim: claim(),
        threadMetadata: null,
        assistantRowVersion: undefined,
      });
      await untilAdvisoryLockWaited(db().sql);
      createdMeanwhile = await pendingRun(tx, threadId);
    });
    expect(await starting).toEqual({ started: undefined, notQuiet: true });
    expect((await runsOf(threadId)).map((r) => r.run_id)).toEqual([createdMeanwhile]);
  });

  it("refuses, writing nothing, a run made from an assistant whose row changed since it was read", async () => {
    const threadId = await newThread();
    const read = await findVersionedAssistant(db().sql, workspaceId, assistantId);
    await db().sql`update assistants set updated_at = now() where assistant_id = ${assistantId}`;
    const stale = await startRunOnQuietThread(db().sql, runOn(threadId), {
      claim: claim(),
      threadMetadata: null,
      assistantRowVersion: read?.rowVersion,
    });
    expect(stale).toEqual({ started: undefined, assistantChanged: true });
    expect(await runsOf(threadId)).toEqual([]);
    const current = await findVersionedAssistant(db().sql, workspaceId, assistantId);
    const made = await startRunOnQuietThread(db().sql, runOn(threadId), {
      claim: claim(),
      threadMetadata: null,
      assistantRowVersion: current?.rowVersion,
    });
    expect(made.started?.status).toBe("running");
  });
});

describe("the quiet thread's fast path", () => {
  const request = testRunRequest({
    input: { question: "?" },
    config: { configurable: { from: "request" } },
    onCompletion: "keep",
  });

  /** Real run slots (one) behind a LocalRuns that records the claims its slots are handed. */
  function localRuns() {
    const slots = createRunSlots(1);
    const claims: RunClaim[] = [];
    const reserve = (): RunSlot | undefined => {
      const held = slots.tryTake();
      return held
        ? {
            owner: "quiet-thread-test",
            leaseToken: randomUUID(),
            run: (c) => claims.push(c),
            release: () => held.release(),
          }
        : undefined;
    };
    const local: LocalRuns = {
      reserve,
      reserveWithin: async () => reserve(),
      backlog: () => undefined,
    };
    return { slots, claims, local };
  }

  function depsOf(local: LocalRuns) {
    const sql = db().sql;
    return {
      sql,
      settings: { leaseSeconds: 15, richThreads: true },
      configurableHeaders: undefined,
      graphIds: () => ["g"],
      assistants: createRunAssistantCache(sql, { graphIds: () => ["g"] }),
      localRuns: local,
    };
  }

  function asked(threadId: string, overrides: Partial<RunRequest> = {}) {
    return {
      workspaceId,
      threadId,
      target: { kind: "thread" as const, threadId },
      request: { ...request, assistantId, ...overrides },
      headers: new Headers(),
      creator,
      lookup: { id: assistantId, visible: undefined },
    };
  }

  it("starts the run in a slot of this process, made as the long way makes it", async () => {
    const { slots, claims, local } = localRuns();
    const threadId = await newThread();
    const created = await startOnQuietThread(depsOf(local), asked(threadId));
    expect(created).toMatchObject({ threadId, status: "pending", attempt: 0 });
    expect(claims.map((c) => c.run)).toMatchObject([
      { runId: created?.runId, status: "running", attempt: 1 },
    ]);
    expect(slots.usage().busy).toBe(1);
    const [row] = await db().sql<{ configurable: unknown; input: unknown }[]>`
      select kwargs -> 'config' -> 'configurable' as configurable, kwargs -> 'input' as input
      from agent_runs where run_id = ${created?.runId ?? ""}`;
    expect(row?.input).toEqual({ question: "?" });
    expect(row?.configurable).toMatchObject({ from: "request" });
  });

  it("gives the slot back and writes nothing for a thread that is not quiet", async () => {
    const { slots, claims, local } = localRuns();
    const threadId = await newThread();
    const ahead = await pendingRun(db().sql, threadId);
    expect(await startOnQuietThread(depsOf(local), asked(threadId))).toBeUndefined();
    expect(claims).toEqual([]);
    expect(slots.usage().busy).toBe(0);
    expect((await runsOf(threadId)).map((r) => r.run_id)).toEqual([ahead]);
  });

  it("is not tried for a run that waits, names a checkpoint, is filtered by custom auth, or has no slot", async () => {
    const { slots, local } = localRuns();
    const threadId = await newThread();
    const deps = depsOf(local);
    const checkpoint = { thread_id: threadId, checkpoint_id: uuidv7(), checkpoint_ns: "" };
    expect(await startOnQuietThread(deps, asked(threadId, { afterSeconds: 5 }))).toBeUndefined();
    expect(await startOnQuietThread(deps, asked(threadId, { checkpoint }))).toBeUndefined();
    const filtered = {
      ...asked(threadId),
      target: {
        kind: "thread" as const,
        threadId,
        auth: { kind: "eq" as const, key: "owner", value: "ann" },
      },
    };
    expect(await startOnQuietThread(deps, filtered)).toBeUndefined();
    const held = slots.tryTake();
    expect(await startOnQuietThread(deps, asked(threadId))).toBeUndefined();
    held?.release();
    expect(await runsOf(threadId)).toEqual([]);
    expect(slots.usage().busy).toBe(0);
  });

  it("forgets a kept assistant that changed, so that the next run is made from it as it is now", async () => {
    const { local } = localRuns();
    const deps = depsOf(local);
    const first = await startOnQuietThread(deps, asked(await newThread()));
    expect(first).toBeDefined();
    await db().sql`
      update assistants set config = '{"configurable": {"from": "changed"}}' where assistant_id = ${assistantId}`;
    const fresh = localRuns();
    const again = { ...deps, localRuns: fresh.local };
    const threadId = await newThread();
    expect(await startOnQuietThread(again, asked(threadId, { config: {} }))).toBeUndefined();
    expect(fresh.slots.usage().busy).toBe(0);
    const made = await startOnQuietThread(again, asked(threadId, { config: {} }));
    const [row] = await db().sql<{ configurable: unknown }[]>`
      select kwargs -> 'config' -> 'configurable' as configurable from agent_runs where run_id = ${made?.runId ?? ""}`;
    expect(row?.configurable).toMatchObject({ from: "changed" });
  });
});
