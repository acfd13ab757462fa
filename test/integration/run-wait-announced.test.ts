/**
 * Waiting for a run's end (services/agents/run-streams.ts waitForRunEnd) when the run ended in
 * another process, on a real database: a waiter that created the run answers from the end's
 * announcement (migration 0038) without reading the run, and one that did not, or that heard an
 * end announcing nothing, reads the row.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { createRunEventBus, type RunEventBus } from "../../server/runtime/run-event-bus.js";
import { waitForRunEnd } from "../../server/services/agents/run-streams.js";
import type { AgentRunRecord } from "../../server/store/agents/agent-run-store.js";
import { RUN_EVENTS_CHANNEL } from "../../server/store/agents/run-event-store.js";
import { insertThreads } from "../../server/store/agents/thread-store.js";
import { insertTestAssistant } from "../support/assistants.js";
import { useTestDatabase } from "../support/database.js";
import { insertTestRun } from "../support/runs.js";
import { createTestWorkspace } from "../support/tenancy.js";

const db = useTestDatabase();
let workspaceId: string;
let bus: RunEventBus;
const assistantId = randomUUID();

beforeAll(async () => {
  const sql = db().sql;
  workspaceId = await createTestWorkspace(sql);
  await insertTestAssistant(sql, workspaceId, assistantId);
  bus = await createRunEventBus(sql);
});
afterAll(async () => {
  await bus.close();
});

/** A pending run on a new thread, as its creator holds it. */
async function createdRun(): Promise<AgentRunRecord> {
  const threadId = uuidv7();
  await insertThreads(db().sql, [{ workspaceId, threadId, metadata: {}, ttl: null }]);
  return insertTestRun(db().sql, { workspaceId, assistantId, threadId }, { metadata: { kept: true } });
}

/** The NOTIFY an end in another process sends, with `announcement` after its seq when given. */
async function announceEnd(run: AgentRunRecord, announcement?: object): Promise<void> {
  const tail = announcement ? ` ${JSON.stringify(announcement)}` : "";
  await db().sql`select pg_notify(${RUN_EVENTS_CHANNEL}, ${`${run.runId} ${run.threadId} end 99${tail}`})`;
}

const announced = {
  status: "success",
  attempt: 1,
  cancel_action: null,
  cancel_reason: null,
  updated_at: "2026-12-04T10:00:00.000+00:00",
  output: { reply: "from the announcement" },
};

describe("waiting for a run that ended in another process", () => {
  it("answers the run its creator holds with what the end announced, without reading the row", async () => {
    const run = await createdRun();
    const waiting = waitForRunEnd({ sql: db().sql, bus }, run, new AbortController().signal, {
      created: run,
    });
    // The wait's watch opened as it was called. The row still says pending: an answer of "success" can only come from the announcement.
    await announceEnd(run, announced);
    expect(await waiting).toEqual({
      ...run,
      status: "success",
      attempt: 1,
      output: { reply: "from the announcement" },
      updatedAt: new Date(announced.updated_at),
    });
  });

  it("reads the row when the end announced nothing, or when the waiter did not create the run", async () => {
    for (const created of [true, false]) {
      const run = await createdRun();
      const controller = new AbortController();
      const waiting = waitForRunEnd(
        { sql: db().sql, bus },
        run,
        controller.signal,
        created ? { created: run } : {},
      );
      await db()
        .sql`update agent_runs set status = 'success', output = ${db().sql.json({ reply: "from the row" })}
        where run_id = ${run.runId}`;
      // What a waiter that did not create the run hears is not trusted: it reads the row.
      await announceEnd(run, created ? undefined : announced);
      const ended = await waiting;
      expect(ended?.status).toBe("success");
      expect(ended?.output).toEqual({ reply: "from the row" });
    }
  });
});
