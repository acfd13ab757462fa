/**
 * Run creation's invariants on a real database and a real server: the stateless fast path
 * (services/agents/stateless-start.ts) inserts its thread and its claimed run in one statement and
 * gives its slot back when that statement fails; a run created here with a free slot is never
 * queued; one created while every slot is busy waits in the backlog (jobs/run-backlog.ts) without a
 * job, and goes to the queue when the backlog is full or it waited too long; a stateless run its
 * caller waits on waits for a slot before anything is written (and a caller gone meanwhile leaves
 * nothing); a stateless run made from a kept assistant is made from the assistant as it is now.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_RUN_SETTINGS } from "../../server/config.js";
import { uuidv7 } from "../../server/ids.js";
import type { RunSlot } from "../../server/jobs/agent-run-job.js";
import { BACKLOG_WAIT_MS } from "../../server/jobs/run-backlog.js";
import { createRunSlots } from "../../server/jobs/run-slots.js";
import { startStatelessHere, startsStatelessHere } from "../../server/services/agents/stateless-start.js";
import type { RunClaim } from "../../server/store/agents/agent-run-store.js";
import { insertRunOnNewThread } from "../../server/store/agents/agent-run-store.js";
import {
  type AssistantRecord,
  findAssistant,
  findVersionedAssistant,
} from "../../server/store/agents/assistant-store.js";
import { createSql, type Sql } from "../../server/store/db.js";
import { type GraphFixture, writeGraphFixture } from "../support/graph-fixture.js";
import { testRunRequest } from "../support/run-request.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** A graph that sleeps `pause_ms` and answers, so a run can hold the process's one slot. */
const SLEEPY_GRAPH = `
import { Annotation, START, StateGraph } from "@langchain/langgraph";
const State = Annotation.Root({ pause_ms: Annotation(), reply: Annotation() });
export const graph = new StateGraph(State)
  .addNode("answer", async (state) => {
    await new Promise((resolve) => setTimeout(resolve, state.pause_ms ?? 0));
    return { reply: "ok" };
  })
  .addEdge(START, "answer")
  .compile();
`;

let fixture: GraphFixture;
let app: TestApp;
let sql: Sql;

beforeAll(async () => {
  fixture = await writeGraphFixture(
    { "sleepy.mjs": SLEEPY_GRAPH },
    { graphs: { sleepy: "./sleepy.mjs:graph" } },
  );
  // One slot: a second run created while the first holds it cannot start here.
  app = await startTestApp({
    graphConfigPath: fixture.configFile,
    runs: { ...DEFAULT_RUN_SETTINGS, workers: 1 },
  });
  sql = createSql(app.databaseUrl, { max: 2, statementTimeoutMs: 0, applicationName: "run-creation-test" });
});

afterAll(async () => {
  await sql?.end();
  await app?.stop();
  await fixture?.remove();
});

/** Creates a stateless run kept after it ends (so its row and thread stay to look at). */
async function createStateless(pauseMs: number): Promise<{ run_id: string; thread_id: string }> {
  const response = await app.fetch("/runs", {
    method: "POST",
    body: JSON.stringify({ assistant_id: "sleepy", input: { pause_ms: pauseMs }, on_completion: "keep" }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { run_id: string; thread_id: string };
}

/** Waits for the run to end and answers its status. */
async function joined(run: { run_id: string; thread_id: string }): Promise<string> {
  const response = await app.fetch(`/threads/${run.thread_id}/runs/${run.run_id}/join`);
  expect(response.status).toBe(200);
  const [row] = await sql<{ status: string }[]>`select status from agent_runs where run_id = ${run.run_id}`;
  return row?.status ?? "missing";
}

/** The queue's jobs for a run. */
async function jobsOf(runId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from pgboss.job where name = 'agent.run' and data ->> 'runId' = ${runId}`;
  return row?.n ?? 0;
}

describe("run creation", () => {
  it("starts a stateless run in a free slot of this process without queueing it", async () => {
    const run = await createStateless(0);
    expect(await joined(run)).toBe("success");
    const [row] = await sql<
      { attempt: number }[]
    >`select attempt from agent_runs where run_id = ${run.run_id}`;
    expect(row?.attempt).toBe(1);
    expect(await jobsOf(run.run_id)).toBe(0);
  });

  it("has a run created while every slot is busy wait in the backlog, without a job, then start here", async () => {
    const holding = await createStateless(300);
    const waiting = await createStateless(0);
    const [row] = await sql<
      { status: string }[]
    >`select status from agent_runs where run_id = ${waiting.run_id}`;
    expect(row?.status).toBe("pending");
    expect(await joined(holding)).toBe("success");
    expect(await joined(waiting)).toBe("success");
    expect(await jobsOf(waiting.run_id)).toBe(0);
  });

  it("queues a run the backlog has no room for at once, and one that waited too long in it", async () => {
    const holding = await createStateless(BACKLOG_WAIT_MS + 1_500);
    // The backlog holds four runs per slot: the process has one.
    const waiting = await createStateless(0);
    for (let i = 0; i < 3; i++) await createStateless(0);
    const queued = await createStateless(0);
    expect(await jobsOf(waiting.run_id)).toBe(0);
    expect(await jobsOf(queued.run_id)).toBe(1);
    // Its wait ran out while the slot stayed busy: it has its job now, for any worker to take.
    const deadline = Date.now() + BACKLOG_WAIT_MS + 10_000;
    while ((await jobsOf(waiting.run_id)) === 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await jobsOf(waiting.run_id)).toBe(1);
    for (const run of [holding, waiting, queued]) expect(await joined(run)).toBe("success");
  });
});

describe("a stateless run its caller waits on", () => {
  /** `POST /runs/wait` of a run kept after it ends, marked by its `pause_ms` (unique per test). */
  function waitRun(pauseMs: number, signal?: AbortSignal): Promise<Response> {
    return app.fetch("/runs/wait", {
      method: "POST",
      body: JSON.stringify({ assistant_id: "sleepy", input: { pause_ms: pauseMs }, on_completion: "keep" }),
      ...(signal ? { signal } : {}),
    });
  }

  /** The runs marked `pauseMs`, with when they were created and started. */
  function runsMarked(pauseMs: number) {
    return sql<{ run_id: string; status: string; attempt: number; created_at: Date; started_at: Date }[]>`
      select run_id, status, attempt, created_at, started_at from agent_runs
      where kwargs -> 'input' ->> 'pause_ms' = ${String(pauseMs)}`;
  }

  /** Runs waiting for the process's slot, from its metrics. */
  async function slotWaiters(): Promise<number> {
    const text = await (await app.fetch("/metrics")).text();
    const line = text.split("\n").find((l) => l.startsWith("agentplane_agent_run_slot_waiters "));
    return Number(line?.split(" ")[1] ?? Number.NaN);
  }

  /** When a run ended. */
  async function endedAt(runId: string): Promise<Date> {
    const [row] = await sql<{ ended_at: Date }[]>`select ended_at from agent_runs where run_id = ${runId}`;
    if (!row) throw new Error(`no run ${runId}`);
    return row.ended_at;
  }

  it("waits for a slot before anything is written, then starts in it, claimed as it is inserted", async () => {
    const holding = await createStateless(400);
    const answer = waitRun(11);
    await expect(joined(holding)).resolves.toBe("success");
    expect((await answer).status).toBe(200);
    const [run] = await runsMarked(11);
    // Written only once the slot was free, and already started: one attempt, no job.
    expect(run).toMatchObject({ status: "success", attempt: 1 });
    expect(run?.created_at.getTime()).toBeGreaterThanOrEqual((await endedAt(holding.run_id)).getTime());
    expect(await jobsOf(run?.run_id ?? "")).toBe(0);
  });

  it("writes nothing for a caller that went away while it waited, and gives up its turn", async () => {
    const holding = await createStateless(400);
    const abort = new AbortController();
    const gone = waitRun(12, abort.signal).catch((error: unknown) => error);
    // Creations of one process are served in turn: this one queues behind the first.
    const after = waitRun(13);
    while ((await slotWaiters()) < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    abort.abort();
    expect(await gone).toBeInstanceOf(Error);
    expect(await joined(holding)).toBe("success");
    expect((await after).status).toBe(200);
    // Had the first still waited, the freed slot would have gone to it before the second.
    expect(await runsMarked(12)).toEqual([]);
    expect(await runsMarked(13)).toHaveLength(1);
  });

  it("is written pending, as any other run, when no slot frees up within the wait", async () => {
    const holding = await createStateless(BACKLOG_WAIT_MS + 1_000);
    const response = await waitRun(14);
    expect(response.status).toBe(200);
    const [run] = await runsMarked(14);
    expect(run?.status).toBe("success");
    // Written while the slot was still busy, started once it was free.
    expect(run?.created_at.getTime()).toBeLessThan((await endedAt(holding.run_id)).getTime());
    expect(run?.started_at.getTime()).toBeGreaterThanOrEqual((await endedAt(holding.run_id)).getTime());
  });
});

describe("the kept assistants of stateless runs", () => {
  /** A stateless run of `assistantId` kept after it ends; answers its stored config and status. */
  async function runOf(assistantId: string): Promise<{ status: number; configurable: unknown }> {
    const response = await app.fetch("/runs", {
      method: "POST",
      body: JSON.stringify({ assistant_id: assistantId, input: { pause_ms: 0 }, on_completion: "keep" }),
    });
    if (response.status !== 200) return { status: response.status, configurable: undefined };
    const run = (await response.json()) as { run_id: string; thread_id: string };
    const [row] = await sql<{ configurable: unknown }[]>`
      select kwargs -> 'config' -> 'configurable' as configurable from agent_runs where run_id = ${run.run_id}`;
    await joined(run);
    return { status: 200, configurable: row?.configurable };
  }

  it("makes a run from the assistant as it is now, after it changed or went since the last run", async () => {
    const created = await app.fetch("/assistants", {
      method: "POST",
      body: JSON.stringify({ graph_id: "sleepy", config: { configurable: { version: 1 } } }),
    });
    const { assistant_id: assistantId } = (await created.json()) as { assistant_id: string };
    expect(await runOf(assistantId)).toMatchObject({ status: 200, configurable: { version: 1 } });
    // Kept now: the next run is made from the kept record, checked against the row.
    expect(await runOf(assistantId)).toMatchObject({ status: 200, configurable: { version: 1 } });
    const patched = await app.fetch(`/assistants/${assistantId}`, {
      method: "PATCH",
      body: JSON.stringify({ config: { configurable: { version: 2 } } }),
    });
    expect(patched.status).toBe(200);
    expect(await runOf(assistantId)).toMatchObject({ status: 200, configurable: { version: 2 } });
    expect((await app.fetch(`/assistants/${assistantId}`, { method: "DELETE" })).status).toBeLessThan(300);
    expect((await runOf(assistantId)).status).toBe(404);
  });

  it("inserts nothing when the assistant's row is no longer at the version the run was made from", async () => {
    const [row] = await sql<{ workspace_id: string; assistant_id: string }[]>`
      select workspace_id, assistant_id from assistants where graph_id = 'sleepy' limit 1`;
    if (!row) throw new Error("no system assistant of the sleepy graph");
    const read = await findVersionedAssistant(sql, row.workspace_id, row.assistant_id);
    if (!read) throw new Error("no assistant");
    const run = {
      workspaceId: row.workspace_id,
      runId: uuidv7(),
      threadId: uuidv7(),
      assistantId: row.assistant_id,
      graphId: "sleepy",
      metadata: {},
      kwargs: {},
      multitaskStrategy: "enqueue" as const,
      temporary: true,
      afterSeconds: 0,
      creator: { apiKeyId: null, userId: null },
    };
    await sql`update assistants set updated_at = now() where assistant_id = ${row.assistant_id}`;
    const stale = await insertRunOnNewThread(sql, run, {}, { assistantRowVersion: read.rowVersion });
    expect(stale).toEqual({ inserted: undefined, assistantChanged: true });
    const [threads] = await sql<
      { n: number }[]
    >`select count(*)::int as n from threads where thread_id = ${run.threadId}`;
    expect(threads?.n).toBe(0);
    const current = await findVersionedAssistant(sql, row.workspace_id, row.assistant_id);
    const made = await insertRunOnNewThread(sql, run, {}, { assistantRowVersion: current?.rowVersion ?? "" });
    expect(made.inserted?.runId).toBe(run.runId);
  });
});

describe("the stateless fast path", () => {
  const request = testRunRequest({ assistantId: "sleepy" });

  /** A slot of real run slots, recording the claim it is handed. */
  function slotOf(slots: ReturnType<typeof createRunSlots>): RunSlot & { claims: RunClaim[] } {
    const held = slots.tryTake();
    if (!held) throw new Error("no free slot");
    const claims: RunClaim[] = [];
    return {
      owner: "run-creation-test",
      leaseToken: randomUUID(),
      claims,
      run: (claim) => claims.push(claim),
      release: () => held.release(),
    };
  }

  it("is taken only by a stateless run that may start now", () => {
    expect(startsStatelessHere({ kind: "stateless" }, request)).toBe(true);
    expect(startsStatelessHere({ kind: "stateless" }, { ...request, afterSeconds: 5 })).toBe(false);
    expect(startsStatelessHere({ kind: "thread", threadId: uuidv7() }, request)).toBe(false);
  });

  /** The system assistant of the sleepy graph, as the run service reads it. */
  async function sleepyAssistant(): Promise<{ workspaceId: string; assistant: AssistantRecord }> {
    const [row] = await sql<{ workspace_id: string; assistant_id: string }[]>`
      select workspace_id, assistant_id from assistants where graph_id = 'sleepy' limit 1`;
    const found = row && (await findAssistant(sql, row.workspace_id, row.assistant_id));
    if (!row || !found) throw new Error("no system assistant of the sleepy graph");
    return { workspaceId: row.workspace_id, assistant: found };
  }

  it("inserts the new thread and the run claimed under the slot's lease, in one statement", async () => {
    const { workspaceId, assistant } = await sleepyAssistant();
    const slots = createRunSlots(1);
    const slot = slotOf(slots);
    const deps = { sql, settings: { leaseSeconds: 15 }, configurableHeaders: undefined };
    const created = await startStatelessHere(
      deps,
      {
        workspaceId,
        assistant,
        rowVersion: undefined,
        request,
        headers: new Headers(),
        creator: { apiKeyId: null, userId: null },
        newThreadMetadata: undefined,
      },
      slot,
    );
    if (!created) throw new Error("the run was not created");
    expect(created.status).toBe("pending");
    const [claim] = slot.claims;
    expect(claim?.run).toMatchObject({ status: "running", attempt: 1, runId: created.runId });
    const [thread] = await sql<
      { status: string }[]
    >`select status from threads where thread_id = ${created.threadId}`;
    expect(thread?.status).toBe("busy");
    const [lease] = await sql<{ lease_owner: string }[]>`
      select lease_owner from agent_runs where run_id = ${created.runId}`;
    expect(lease?.lease_owner).toBe("run-creation-test");
    // The slot is the attempt's now: the creator did not give it back.
    expect(slots.usage().busy).toBe(1);
    await sql`delete from agent_runs where run_id = ${created.runId}`;
    await sql`delete from threads where thread_id = ${created.threadId}`;
  });

  it("gives its slot back, and writes nothing, when the statement fails", async () => {
    const slots = createRunSlots(1);
    const slot = slotOf(slots);
    const { assistant } = await sleepyAssistant();
    // No such workspace: the thread's insert fails on its foreign key.
    const workspaceId = randomUUID();
    const deps = { sql, settings: { leaseSeconds: 15 }, configurableHeaders: undefined };
    await expect(
      startStatelessHere(
        deps,
        {
          workspaceId,
          assistant,
          rowVersion: undefined,
          request,
          headers: new Headers(),
          creator: { apiKeyId: null, userId: null },
          newThreadMetadata: undefined,
        },
        slot,
      ),
    ).rejects.toThrow();
    expect(slot.claims).toEqual([]);
    expect(slots.usage().busy).toBe(0);
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from threads where workspace_id = ${workspaceId}`;
    expect(row?.n).toBe(0);
  });
});
