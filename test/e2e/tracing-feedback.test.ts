/**
 * Feedback through the OFFICIAL `langsmith` SDK (createFeedback, listFeedback, readFeedback,
 * updateFeedback, deleteFeedback) against a running server: each change shows in the run's
 * `feedback_stats` and in run queries filtered by feedback, multipart feedback parts are stored,
 * the SDK prints no warning about the server, and bad input gets a clear 4xx.
 */
import { randomUUID } from "node:crypto";
import type { Client } from "langsmith";
import { traceable } from "langsmith/traceable";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { langsmithClient } from "../support/langsmith-client.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let client: Client;
/** Everything the SDK printed while this file ran. */
const printed: string[] = [];
let projectId = "";
let rootId = "";
let childId = "";

beforeAll(async () => {
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    const original = console[level].bind(console);
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      printed.push(args.map(String).join(" "));
      original(...args);
    });
  }
  t = await startTestApp();
  client = langsmithClient(t).client;
  const project = `feedback-${randomUUID()}`;
  const options = { client, project_name: project, tracingEnabled: true } as const;
  const child = traceable(async (q: string) => `echo ${q}`, {
    ...options,
    name: "child",
    run_type: "tool",
    on_start: (run) => {
      childId = run?.id ?? "";
    },
  });
  const root = traceable(async (q: string) => ({ answer: await child(q) }), {
    ...options,
    name: "root",
    on_start: (run) => {
      rootId = run?.id ?? "";
    },
  });
  await root("hi");
  await client.awaitPendingTraceBatches();
  projectId = (await client.readProject({ projectName: project })).id;
});
afterAll(() => t?.stop());

/** The run's feedback_stats, as RunService.ReadRun answers over REST. */
async function statsOf(runId: string): Promise<unknown> {
  const res = await t.fetch(`/api/v1/runs/${runId}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { feedback_stats?: unknown }).feedback_stats ?? null;
}

/** Ids of the project's runs matching a filter, through POST /api/v1/runs/query. */
async function matching(filter: string): Promise<string[]> {
  const res = await t.fetch("/api/v1/runs/query", {
    method: "POST",
    body: JSON.stringify({ session: [projectId], filter, select: ["id"] }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { runs: { id: string }[] }).runs.map((r) => r.id);
}

describe("feedback through the langsmith SDK", () => {
  it("creates, lists, reads, updates and deletes feedback, feedback_stats following every change", async () => {
    const good = await client.createFeedback(rootId, "correctness", {
      score: 1,
      comment: "right",
      sessionId: projectId,
      sourceInfo: { reviewer: "e2e" },
    });
    const bad = await client.createFeedback(rootId, "correctness", {
      score: 0,
      value: "wrong",
      correction: { answer: "echo hi!" },
      sessionId: projectId,
      feedbackSourceType: "model",
    });
    await client.createFeedback(childId, "helpful", { score: true, sessionId: projectId });

    expect(await statsOf(rootId)).toEqual({ correctness: { n: 2, avg: 0.5, values: { wrong: 1 } } });
    expect(await statsOf(childId)).toEqual({ helpful: { n: 1, avg: 1, values: {} } });

    const read = await client.readFeedback(bad.id);
    expect(read).toMatchObject({
      id: bad.id,
      run_id: rootId,
      key: "correctness",
      score: 0,
      value: "wrong",
      correction: { answer: "echo hi!" },
      feedback_source: { type: "model", metadata: {} },
      session_id: projectId,
    });
    expect(Date.parse(read.created_at)).not.toBeNaN();

    const list = async (params: Parameters<Client["listFeedback"]>[0]) => {
      const items = [];
      for await (const item of client.listFeedback(params)) items.push(item.id);
      return items.sort();
    };
    expect(await list({ runIds: [rootId] })).toEqual([good.id, bad.id].sort());
    expect(await list({ runIds: [rootId, childId], feedbackKeys: ["helpful"] })).toHaveLength(1);
    expect(await list({ runIds: [rootId, childId], feedbackSourceTypes: ["model"] })).toEqual([bad.id]);
    expect((await client.readFeedback(good.id)).feedback_source?.metadata).toEqual({ reviewer: "e2e" });

    expect(await matching(`and(eq(feedback_key, "correctness"), eq(feedback_score, 1))`)).toEqual([rootId]);
    expect(await matching(`and(eq(feedback_key, "helpful"), gt(feedback_score, 0.5))`)).toEqual([childId]);
    expect(await matching(`and(eq(feedback_key, "correctness"), gt(feedback_score, 1))`)).toEqual([]);

    await client.updateFeedback(bad.id, { score: 0.5, value: "partly" });
    expect(await statsOf(rootId)).toEqual({ correctness: { n: 2, avg: 0.75, values: { partly: 1 } } });
    expect(await matching(`and(eq(feedback_key, "correctness"), eq(feedback_score, 0.5))`)).toEqual([rootId]);

    await client.deleteFeedback(good.id);
    expect(await statsOf(rootId)).toEqual({ correctness: { n: 1, avg: 0.5, values: { partly: 1 } } });
    await client.deleteFeedback(bad.id);
    expect(await statsOf(rootId)).toBeNull();
    expect(await matching(`eq(feedback_key, "correctness")`)).toEqual([]);
    expect(await list({ runIds: [rootId] })).toEqual([]);
  });

  it("pages the list the way the SDK follows it", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await t.fetch("/api/v1/feedback", {
        method: "POST",
        body: JSON.stringify({ run_id: childId, key: "paged", score: i }),
      });
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { id: string }).id);
    }
    const pages: string[][] = [];
    for (let offset = 0; offset < 10; offset += 2) {
      const res = await t.fetch(`/api/v1/feedback?run=${childId}&key=paged&offset=${offset}&limit=2`);
      pages.push(((await res.json()) as { id: string }[]).map((f) => f.id));
    }
    expect(pages.flat()).toEqual([...ids].reverse());
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1, 0, 0]);
    expect(await statsOf(childId)).toMatchObject({ paged: { n: 5, avg: 2 } });
  });

  it("stores feedback on a trace (its root run) and feedback parts of a multipart upload", async () => {
    const res = await t.fetch("/api/v1/feedback", {
      method: "POST",
      body: JSON.stringify({ trace_id: rootId, key: "on-trace", value: "yes" }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ run_id: rootId, trace_id: rootId, key: "on-trace" });

    const feedbackId = uuidv7();
    const part = {
      trace_id: rootId,
      run_id: childId,
      key: "multipart",
      score: 0.25,
      correction: "better",
      feedback_source: { type: "app" },
    };
    // One part with its declared length, as the SDKs send them.
    const json = JSON.stringify(part);
    const boundary = `b-${randomUUID()}`;
    const body = [
      `--${boundary}`,
      `Content-Disposition: form-data; name="feedback.${feedbackId}"`,
      `Content-Type: application/json; length=${Buffer.byteLength(json)}`,
      "",
      json,
      `--${boundary}--`,
      "",
    ].join("\r\n");
    const sent = await t.fetch("/api/v1/runs/multipart", {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    });
    expect(sent.status).toBe(202);
    expect(await client.readFeedback(feedbackId)).toMatchObject({
      run_id: childId,
      trace_id: rootId,
      score: 0.25,
      correction: "better",
      feedback_source: { type: "app" },
    });
    expect(await statsOf(childId)).toMatchObject({ multipart: { n: 1, avg: 0.25 } });
    expect(await statsOf(rootId)).toEqual({ "on-trace": { n: 1, avg: null, values: { yes: 1 } } });
  });

  it("counts feedback sent before its run once the run arrives", async () => {
    const runId = uuidv7();
    const early = await t.fetch("/api/v1/feedback", {
      method: "POST",
      body: JSON.stringify({ run_id: runId, key: "early", score: 1 }),
    });
    expect(early.status).toBe(200);
    const now = new Date().toISOString();
    const stamp = now.replace(/[-:]/g, "").replace(/\.(\d{3})Z$/, "$1000Z");
    const posted = await t.fetch("/api/v1/runs", {
      method: "POST",
      body: JSON.stringify({
        id: runId,
        trace_id: runId,
        dotted_order: `${stamp}${runId}`,
        name: "late",
        run_type: "chain",
        start_time: now,
        session_id: projectId,
      }),
    });
    expect(posted.status).toBe(202);
    expect(await statsOf(runId)).toEqual({ early: { n: 1, avg: 1, values: {} } });
  });

  it("keeps feedback_stats exact when two processes store feedback on one run at once", async () => {
    const other = await startTestApp({ databaseUrl: t.databaseUrl, bootstrapApiKey: t.adminKey });
    try {
      const sends = Array.from({ length: 12 }, (_, i) =>
        (i % 2 === 0 ? t : other).fetch("/api/v1/feedback", {
          method: "POST",
          body: JSON.stringify({ run_id: rootId, key: "concurrent", score: i % 3 }),
        }),
      );
      for (const res of await Promise.all(sends)) expect(res.status).toBe(200);
      expect(await statsOf(rootId)).toMatchObject({ concurrent: { n: 12, avg: 1 } });
    } finally {
      await other.stop();
    }
  });

  it("prints no warning about the server: version, info and feedback calls", async () => {
    // The v2 resources check the server's version against the SDK's minimum, after /info.
    void client.runs;
    void client.threads;
    // The check runs on the cached /info answer a few microtasks later.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const problems = printed.filter((line) =>
      /LANGSMITH|older than|sessionId|Failed to fetch info/.test(line),
    );
    expect(problems).toEqual([]);
  });
});

describe("bad feedback input", () => {
  const post = (body: unknown) => t.fetch("/api/v1/feedback", { method: "POST", body: JSON.stringify(body) });
  const detail = async (res: Response) => ((await res.json()) as { detail: string }).detail;

  it("answers 4xx saying what to fix", async () => {
    let res = await post({ run_id: rootId });
    expect(res.status).toBe(422);
    expect(await detail(res)).toMatch(/"key" is required/);
    res = await post({ key: "k" });
    expect(res.status).toBe(422);
    expect(await detail(res)).toMatch(/"run_id" or "trace_id" is required/);
    res = await post({ run_id: "not-a-uuid", key: "k" });
    expect(res.status).toBe(422);
    expect(await detail(res)).toMatch(/run_id/);
    res = await post({ run_id: rootId, key: "k", score: "high" });
    expect(res.status).toBe(422);
    expect(await detail(res)).toMatch(/score must be a number or a boolean/);
    res = await post({ run_id: rootId, key: "k", session_id: randomUUID() });
    expect(res.status).toBe(404);
    expect(await detail(res)).toMatch(/project .* not found/);
    res = await post({ run_id: rootId, key: "k", comparative_experiment_id: randomUUID() });
    expect(res.status).toBe(422);
    expect(await detail(res)).toMatch(/not supported by agentplane/);
    // A field a newer langsmith SDK may send is ignored (decision 14), not refused.
    res = await post({ run_id: rootId, key: "k", unknown_field: 1 });
    expect(res.status).toBe(200);

    const id = uuidv7();
    expect((await post({ id, run_id: rootId, key: "twice" })).status).toBe(200);
    res = await post({ id, run_id: rootId, key: "twice" });
    expect(res.status).toBe(409);
    expect(await detail(res)).toMatch(/already exists/);

    res = await t.fetch(`/api/v1/feedback/${randomUUID()}`);
    expect(res.status).toBe(404);
    res = await t.fetch(`/api/v1/feedback/${randomUUID()}`, { method: "DELETE" });
    expect(res.status).toBe(404);
    res = await t.fetch(`/api/v1/feedback/${id}`, { method: "PATCH", body: JSON.stringify({ score: [1] }) });
    expect(res.status).toBe(422);
    res = await t.fetch("/api/v1/feedback?limit=0");
    expect(res.status).toBe(422);
    expect(await detail(res)).toMatch(/limit must be between 1 and 100/);
    res = await t.fetch("/api/v1/feedback?run=nope");
    expect(res.status).toBe(422);
    expect(await detail(res)).toMatch(/run\[0\] must be a UUID/);
  });
});
