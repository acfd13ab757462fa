import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSql } from "../../server/store/db.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Generous: a loaded 2-core machine runs several suites at once. */
const TIMEOUT = 60_000;

describe("agent runs: create, stream, wait", () => {
  let t: TestApp;
  let client: Client;
  beforeAll(async () => {
    t = await startTestApp();
    client = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey });
  }, TIMEOUT);
  afterAll(async () => {
    await t?.stop();
  });

  it(
    "waits for a thread run and answers its final values; the thread goes idle",
    async () => {
      const thread = await client.threads.create();
      const values = (await client.runs.wait(thread.thread_id, "agent", {
        input: { messages: [{ role: "human", content: "hi" }] },
      })) as { messages: { type: string; content: string }[] };
      expect(values.messages.map((m) => m.type)).toEqual(["human", "ai"]);
      const after = await client.threads.get(thread.thread_id);
      expect(after.status).toBe("idle");
      const runs = await client.runs.list(thread.thread_id);
      expect(runs).toHaveLength(1);
      expect(runs[0]?.status).toBe("success");
    },
    TIMEOUT,
  );

  it(
    "streams a run: metadata first, then values, ids of the form <ms>-<seq>",
    async () => {
      const thread = await client.threads.create();
      const events: { event: string; data: unknown; id?: string }[] = [];
      for await (const chunk of client.runs.stream(thread.thread_id, "agent", {
        input: { messages: [{ role: "human", content: "what time is it" }] },
        streamMode: ["values", "updates"],
      })) {
        events.push(chunk as never);
      }
      expect(events[0]?.event).toBe("metadata");
      expect(events.some((e) => e.event === "values")).toBe(true);
      expect(events.some((e) => e.event === "updates")).toBe(true);
      const last = events.filter((e) => e.event === "values").at(-1)?.data as { messages: unknown[] };
      expect(last.messages).toHaveLength(4);
    },
    TIMEOUT,
  );

  it(
    "runs stateless waits and deletes their temporary thread",
    async () => {
      const values = (await client.runs.wait(null, "agent", {
        input: { messages: [{ role: "human", content: "hi" }] },
      })) as { messages: unknown[] };
      expect(values.messages).toHaveLength(2);
    },
    TIMEOUT,
  );

  it(
    "a process that executes runs starts the runs it creates itself: no queue job, one attempt",
    async () => {
      const sql = createSql(t.databaseUrl, { max: 1, statementTimeoutMs: 0, applicationName: "test" });
      try {
        const jobs = async () =>
          (
            await sql<{ n: number }[]>`select count(*)::int as n from pgboss.job where name like 'agent.run%'`
          )[0]?.n;
        const before = await jobs();
        const thread = await client.threads.create();
        const run = await client.runs.create(thread.thread_id, "agent", {
          input: { messages: [{ role: "human", content: "hi" }] },
        });
        await client.runs.join(thread.thread_id, run.run_id);
        await client.runs.wait(null, "agent", { input: { messages: [{ role: "human", content: "hi" }] } });
        const [row] = await sql<{ status: string; attempt: number }[]>`
          select status, attempt from agent_runs where run_id = ${run.run_id}`;
        expect(row).toEqual({ status: "success", attempt: 1 });
        expect(await jobs()).toBe(before);
      } finally {
        await sql.end();
      }
    },
    TIMEOUT,
  );
});
