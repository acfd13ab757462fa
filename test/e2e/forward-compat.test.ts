/**
 * Forward compatibility with the official clients (design.md, decision 14), through real requests:
 * a newer client that adds a body field and a query parameter to everything it sends is served on
 * every LangGraph- and LangSmith-compatible route family, exactly as without them; what it added is
 * counted on /metrics by API and name. agentplane's own APIs keep refusing a typo with 422 naming it.
 */
import { Client } from "@langchain/langgraph-sdk";
import { Client as LangSmithClient } from "langsmith";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Family, parsePrometheusText, sampleValue } from "../support/prometheus-text.js";
import { type RunsApp, sdkClient, startRunsApp } from "../support/runs-app.js";

let r: RunsApp;
let plain: Client;
let newer: Client;
beforeAll(async () => {
  r = await startRunsApp();
  plain = r.sdk;
  newer = newerSdk(r.t.baseUrl, r.t.adminKey);
});
afterAll(() => r?.t.stop());

/** What the "newer release" adds: a member no server knows yet, and a query parameter. */
const FUTURE_FIELD = "future_field";
const FUTURE_PARAM = "future_param";

/** Adds the future member to a JSON body: to the object, or to each object of an array (batches). */
function withFutureField(body: string): string {
  const json: unknown = JSON.parse(body);
  const add = (value: unknown) =>
    typeof value === "object" && value !== null && !Array.isArray(value)
      ? { ...value, [FUTURE_FIELD]: { nested: [1, 2] } }
      : value;
  return JSON.stringify(Array.isArray(json) ? json.map(add) : add(json));
}

/**
 * The official SDK 1.15 acting as a later release: its `onRequest` hook (the SDK's own extension
 * point) adds a body member and a query parameter to every request it sends.
 */
function newerSdk(baseUrl: string, apiKey: string): Client {
  return new Client({
    apiUrl: baseUrl,
    apiKey,
    callerOptions: { maxRetries: 0 },
    onRequest: (url, init) => {
      url.searchParams.set(FUTURE_PARAM, "1");
      return typeof init.body === "string" ? { ...init, body: withFutureField(init.body) } : init;
    },
  });
}

/** A `fetch` that does to the langsmith SDK's requests what {@link newerSdk} does to the LangGraph SDK's. */
const newerFetch: typeof fetch = (input, init) => {
  const url = new URL(String(input));
  url.searchParams.set(FUTURE_PARAM, "1");
  const body = typeof init?.body === "string" ? withFutureField(init.body) : init?.body;
  return fetch(url, { ...init, ...(body === undefined ? {} : { body }) });
};

async function scrape(): Promise<Map<string, Family>> {
  return parsePrometheusText(await (await fetch(`${r.t.baseUrl}/metrics`)).text());
}

function ignoredCount(families: Map<string, Family>, area: string, field: string): number {
  return sampleValue(families, "agentplane_ignored_request_fields_total", { area, field }) ?? 0;
}

/** Fields of a resource that differ between two reads of it (ids and times aside). */
function shape(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value, (key, v) =>
      /(_id|_at|^id|next_run_date)$/.test(key) && typeof v === "string" ? "<varies>" : v,
    ),
  );
}

describe("a newer LangGraph SDK's fields and query parameters", () => {
  it("are ignored on assistants, threads, runs, crons and store, with no effect", async () => {
    const before = await scrape();

    // Assistants.
    const made = await newer.assistants.create({ graphId: "chat", name: "fc", metadata: { fc: 1 } });
    expect(made).not.toHaveProperty(FUTURE_FIELD);
    expect(shape(made)).toEqual(shape(await plain.assistants.get(made.assistant_id)));
    expect(await newer.assistants.search({ metadata: { fc: 1 } })).toEqual(
      await plain.assistants.search({ metadata: { fc: 1 } }),
    );
    expect(await newer.assistants.count({ metadata: { fc: 1 } })).toBe(1);
    await newer.assistants.update(made.assistant_id, { metadata: { fc: 1, more: true } });
    expect((await plain.assistants.get(made.assistant_id)).metadata).toEqual({ fc: 1, more: true });

    // Threads and their state.
    const thread = await newer.threads.create({ metadata: { fc: "thread" } });
    expect(await newer.threads.get(thread.thread_id)).toEqual(await plain.threads.get(thread.thread_id));
    expect(await newer.threads.search({ metadata: { fc: "thread" } })).toEqual(
      await plain.threads.search({ metadata: { fc: "thread" } }),
    );
    expect(await newer.threads.count({ metadata: { fc: "thread" } })).toBe(1);

    // Runs: wait, background create and join, stream, list, batch.
    const input = { messages: [{ role: "human", content: "hi", id: "m1" }] };
    const waited = await newer.runs.wait(thread.thread_id, "chat", { input });
    expect(waited).toEqual(await plain.threads.getState(thread.thread_id).then((s) => s.values));
    const run = await newer.runs.create(thread.thread_id, "chat", {
      input: { messages: [{ role: "human", content: "again", id: "m2" }] },
    });
    await newer.runs.join(thread.thread_id, run.run_id);
    expect((await plain.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
    const events: string[] = [];
    for await (const part of newer.runs.stream(thread.thread_id, "chat", {
      input: { messages: [{ role: "human", content: "stream", id: "m3" }] },
    }))
      events.push(part.event);
    expect(events).toContain("values");
    expect(await newer.runs.list(thread.thread_id)).toEqual(await plain.runs.list(thread.thread_id));
    const batch = await newer.runs.createBatch([{ assistantId: "chat", input }]);
    expect(batch).toHaveLength(1);
    expect(await newer.threads.getState(thread.thread_id)).toEqual(
      await plain.threads.getState(thread.thread_id),
    );
    expect(await newer.threads.getHistory(thread.thread_id)).toEqual(
      await plain.threads.getHistory(thread.thread_id),
    );

    // Crons.
    const cron = await newer.crons.create("chat", { schedule: "0 0 1 1 *", metadata: { fc: "cron" } });
    expect(cron).not.toHaveProperty(FUTURE_FIELD);
    expect(await newer.crons.search({ metadata: { fc: "cron" } })).toEqual(
      await plain.crons.search({ metadata: { fc: "cron" } }),
    );
    expect(await newer.crons.count({ metadata: { fc: "cron" } })).toBe(1);
    const changed = await newer.crons.update(cron.cron_id, { schedule: "0 0 2 1 *" });
    expect(changed.schedule).toBe("0 0 2 1 *");

    // Store.
    await newer.store.putItem(["fc"], "k", { v: 1 });
    const item = await newer.store.getItem(["fc"], "k");
    expect(item?.value).toEqual({ v: 1 });
    expect(await newer.store.searchItems(["fc"])).toEqual(await plain.store.searchItems(["fc"]));
    expect(await newer.store.listNamespaces({ prefix: ["fc"] })).toEqual({ namespaces: [["fc"]] });
    await newer.store.deleteItem(["fc"], "k");
    expect(await plain.store.getItem(["fc"], "k")).toBeNull();

    const after = await scrape();
    for (const area of [
      "agentplane.agents.v1.AssistantService",
      "agentplane.agents.v1.ThreadService",
      "agentplane.agents.v1.RunService",
      "agentplane.agents.v1.CronService",
      "agentplane.agents.v1.StoreService",
    ]) {
      expect(ignoredCount(after, area, FUTURE_PARAM), area).toBeGreaterThan(
        ignoredCount(before, area, FUTURE_PARAM),
      );
      expect(ignoredCount(after, area, FUTURE_FIELD), area).toBeGreaterThan(
        ignoredCount(before, area, FUTURE_FIELD),
      );
    }
  });

  it("counts each ignored name once per request, nested members by their dotted path", async () => {
    const area = "agentplane.agents.v1.ThreadService";
    const before = await scrape();
    const res = await r.t.fetch("/threads/search?x_new=1&x_new=2", {
      method: "POST",
      body: JSON.stringify({ limit: 1, x_new: true, extract: {} }),
    });
    expect(res.status).toBe(200);
    const created = await r.t.fetch("/threads", {
      method: "POST",
      body: JSON.stringify({ ttl: { ttl: 5, strategy: "delete", x_unit: "minutes" } }),
    });
    expect(created.status).toBe(200);
    const after = await scrape();
    expect(ignoredCount(after, area, "x_new") - ignoredCount(before, area, "x_new")).toBe(1);
    expect(ignoredCount(after, area, "ttl.x_unit") - ignoredCount(before, area, "ttl.x_unit")).toBe(1);
  });
});

describe("a newer langsmith SDK's fields and query parameters", () => {
  it("are ignored on the tracing v1 and v2 read and write routes", async () => {
    const client = new LangSmithClient({
      apiUrl: `${r.t.baseUrl}/api/v1`,
      apiKey: r.t.adminKey,
      fetchImplementation: newerFetch,
      autoBatchTracing: false,
    });
    const before = await scrape();
    const project = await client.createProject({ projectName: "forward-compat", description: "d" });
    expect((await client.readProject({ projectId: project.id })).name).toBe("forward-compat");
    const runId = crypto.randomUUID();
    await client.createRun({
      id: runId,
      name: "root",
      run_type: "chain",
      inputs: { q: 1 },
      project_name: "forward-compat",
      start_time: Date.now(),
    });
    await client.updateRun(runId, { outputs: { a: 2 }, end_time: Date.now() });
    const feedback = await client.createFeedback(runId, "quality", { score: 1 });
    expect((await client.readFeedback(feedback.id)).score).toBe(1);
    const runs: unknown[] = [];
    for await (const run of client.listRuns({ projectName: "forward-compat" })) runs.push(run);
    expect(runs).toHaveLength(1);
    const v2 = await fetch(`${r.t.baseUrl}/api/v2/runs/query?${FUTURE_PARAM}=1`, {
      method: "POST",
      headers: { "x-api-key": r.t.adminKey, "content-type": "application/json" },
      body: JSON.stringify({ project_ids: [project.id], [FUTURE_FIELD]: 1 }),
    });
    expect(v2.status).toBe(200);

    const after = await scrape();
    for (const area of [
      "agentplane.tracing.v1.ProjectService",
      "agentplane.tracing.v1.FeedbackService",
      "agentplane.tracing.v1.RunService",
      "agentplane.tracing.v2.RunService",
    ])
      expect(ignoredCount(after, area, FUTURE_PARAM), area).toBeGreaterThan(
        ignoredCount(before, area, FUTURE_PARAM),
      );
    expect(ignoredCount(after, "agentplane.tracing.v1.FeedbackService", FUTURE_FIELD)).toBeGreaterThan(
      ignoredCount(before, "agentplane.tracing.v1.FeedbackService", FUTURE_FIELD),
    );
  });

  it("are ignored on the A2A agent card", async () => {
    const before = await scrape();
    const res = await r.t.fetch(`/.well-known/agent-card.json?assistant_id=chat&${FUTURE_PARAM}=1`);
    expect(res.status).toBe(200);
    expect(ignoredCount(await scrape(), "a2a", FUTURE_PARAM)).toBe(
      ignoredCount(before, "a2a", FUTURE_PARAM) + 1,
    );
  });
});

describe("agentplane's own APIs", () => {
  it("refuse a field or query parameter they do not know with 422 naming it, and count nothing", async () => {
    const before = await scrape();
    const cases: [string, RequestInit, RegExp][] = [
      [
        "/api/v1/workspaces",
        { method: "POST", body: JSON.stringify({ display_nam: "typo" }) },
        /display_nam/,
      ],
      ["/api/v1/workspaces?limt=1", {}, /limt/],
      ["/api/v1/orgs/current/billing/granular-usage?strat_time=x", {}, /strat_time/],
      ["/api/v1/bulk-exports", { method: "POST", body: JSON.stringify({ bucket_nme: "b" }) }, /bucket_nme/],
      ["/ok?chek_db=1", {}, /chek_db/],
    ];
    for (const [path, init, named] of cases) {
      const res = await r.t.fetch(path, init);
      expect(res.status, path).toBe(422);
      expect(((await res.json()) as { detail: string }).detail, path).toMatch(named);
    }
    const after = (await scrape()).get("agentplane_ignored_request_fields_total");
    const beforeFamily = before.get("agentplane_ignored_request_fields_total");
    for (const sample of after?.samples ?? [])
      expect(sample.labels.area, "no own API is counted").not.toMatch(/iam|export|system|UsageService/);
    expect(after?.samples.length).toBe(beforeFamily?.samples.length);
  });

  it("refuse an unknown member even beside valid ones", async () => {
    const res = await fetch(`${r.t.baseUrl}/api/v1/workspaces`, {
      method: "POST",
      headers: { "x-api-key": r.t.adminKey, "content-type": "application/json" },
      body: JSON.stringify({ display_name: "ok", colour: "red" }),
    });
    expect(res.status).toBe(422);
    expect(await res.text()).toContain("colour");
  });
});

describe("the ignored-fields counter", () => {
  it("keeps the counter's series bounded whatever names clients make up", async () => {
    for (let batch = 0; batch < 3; batch++) {
      const names = Array.from({ length: 100 }, (_, i) => `made_up_${batch}_${i}`);
      const res = await r.t.fetch(`/assistants/search?${names.map((n) => `${n}=1`).join("&")}`, {
        method: "POST",
        body: "{}",
      });
      expect(res.status).toBe(200);
    }
    const family = (await scrape()).get("agentplane_ignored_request_fields_total");
    expect(family?.samples.length).toBeLessThanOrEqual(201 + 20);
    expect(
      family?.samples.some((s) => s.labels.field === "(other)" && s.value > 0),
      "names past the bound count under (other)",
    ).toBe(true);
  });
});

describe("the plain official SDK", () => {
  it("still works unchanged against the same routes", async () => {
    const client = sdkClient(r.t.baseUrl, r.t.adminKey);
    const thread = await client.threads.create();
    expect((await client.threads.get(thread.thread_id)).thread_id).toBe(thread.thread_id);
  });
});
