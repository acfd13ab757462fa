import { randomUUID } from "node:crypto";
import { open } from "node:fs/promises";
import { connect } from "node:http2";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey, hashApiKey, shortApiKey } from "../../server/services/iam/api-key-secret.js";
import { createSql } from "../../server/store/db.js";
import { insertApiKey } from "../../server/store/iam/api-key-store.js";
import { langsmithClient } from "../support/langsmith-client.js";
import {
  type Family,
  histogramSeries,
  parsePrometheusText,
  sampleValue,
} from "../support/prometheus-text.js";
import { RUNS_GRAPHS, type RunsApp, sdkClient, startRunsApp, waitFor } from "../support/runs-app.js";
import { createTestWorkspace } from "../support/tenancy.js";
import { startTestApp } from "../support/test-app.js";

let r: RunsApp;
beforeAll(async () => {
  r = await startRunsApp();
});
afterAll(() => r?.t.stop());

/** Scrapes `/metrics` without a key, as Prometheus does, and parses it strictly. */
async function scrape(baseUrl = r.t.baseUrl): Promise<Map<string, Family>> {
  const res = await fetch(`${baseUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return parsePrometheusText(await res.text());
}

/** Every histogram's buckets are cumulative and end in +Inf = _count. */
function expectConsistentHistograms(families: Map<string, Family>): void {
  for (const family of families.values()) {
    if (family.type !== "histogram") continue;
    for (const series of histogramSeries(family)) {
      const counts = series.buckets.map((b) => b.count);
      expect(counts, family.name).toEqual([...counts].sort((a, b) => a - b));
      expect(series.buckets.at(-1)?.count, family.name).toBe(series.count);
      expect(series.sum, family.name).toBeGreaterThanOrEqual(0);
    }
  }
}

const value = (families: Map<string, Family>, name: string, labels: Record<string, string> = {}) =>
  sampleValue(families, name, labels) ?? 0;

describe("GET /metrics", () => {
  it("answers the exposition format without a key, with every family typed and documented", async () => {
    const families = await scrape();
    const expected: Record<string, Family["type"]> = {
      agentplane_http_requests_total: "counter",
      agentplane_http_request_duration_seconds: "histogram",
      agentplane_agent_runs_ended_total: "counter",
      agentplane_agent_run_duration_seconds: "histogram",
      agentplane_agent_runs: "gauge",
      agentplane_agent_run_slots: "gauge",
      agentplane_agent_run_slot_waiters: "gauge",
      agentplane_run_stream_subscribers: "gauge",
      agentplane_queue_jobs: "gauge",
      agentplane_queue_oldest_wait_seconds: "gauge",
      agentplane_queue_worker_up: "gauge",
      agentplane_trace_ingest_rows_total: "counter",
      agentplane_export_partitions: "gauge",
      agentplane_db_pool_max_connections: "gauge",
      agentplane_db_pool_connections: "gauge",
      agentplane_metrics_database_up: "gauge",
      process_cpu_user_seconds_total: "counter",
      nodejs_heap_size_used_bytes: "gauge",
    };
    for (const [name, type] of Object.entries(expected)) {
      expect(families.get(name)?.type, name).toBe(type);
      expect(families.get(name)?.help, name).toBeTruthy();
    }
    expect(value(families, "agentplane_metrics_database_up")).toBe(1);
    expect(value(families, "agentplane_db_pool_max_connections")).toBe(5);
    // The scrape's own query runs on one of the pool's connections.
    expect(value(families, "agentplane_db_pool_connections", { state: "active" })).toBeGreaterThanOrEqual(1);
    // Every job queue has a live worker loop in a process of role `all`.
    const loops = families.get("agentplane_queue_worker_up")?.samples ?? [];
    expect(loops.map((s) => s.labels.queue)).toContain("agent.run");
    expect(loops.every((s) => s.value === 1)).toBe(true);
    expect(value(families, "agentplane_queue_jobs", { queue: "agent.run", state: "created" })).toBe(0);
    expect(value(families, "agentplane_agent_run_slots", { state: "busy" })).toBe(0);
    expect(value(families, "agentplane_agent_run_slots", { state: "idle" })).toBeGreaterThan(0);
    expect(value(families, "agentplane_agent_run_slot_waiters")).toBe(0);
    expect(value(families, "agentplane_export_partitions", { status: "Completed" })).toBe(0);
    expectConsistentHistograms(families);
  });

  it("counts trace rows ingested through the langsmith SDK (before any run, whose traces count too)", async () => {
    const before = await scrape();
    const { client } = langsmithClient(r.t, { autoBatchTracing: false });
    const id = randomUUID();
    await client.createRun({ id, name: "metrics", run_type: "tool", inputs: {}, project_name: "metrics" });
    await client.updateRun(id, { outputs: { done: true }, end_time: Date.now() });
    const after = await scrape();
    const moved = (kind: string) =>
      value(after, "agentplane_trace_ingest_rows_total", { kind }) -
      value(before, "agentplane_trace_ingest_rows_total", { kind });
    expect(moved("run")).toBe(2);
  });

  it("counts runs as they end, with their durations, and HTTP requests by route template and status", async () => {
    const before = await scrape();
    const runs = 3;
    for (let i = 0; i < runs; i++) {
      const thread = await r.sdk.threads.create();
      await r.sdk.runs.wait(thread.thread_id, "echo", { input: {} });
    }
    const failed = await r.sdk.threads.create();
    await r.sdk.runs.wait(failed.thread_id, "failing", { input: {}, raiseError: false });
    const missing = await fetch(`${r.t.baseUrl}/threads/${randomUUID()}`, {
      headers: { "x-api-key": r.t.adminKey },
    });
    expect(missing.status).toBe(404);
    const after = await scrape();

    const moved = (name: string, labels: Record<string, string>) =>
      value(after, name, labels) - value(before, name, labels);
    expect(moved("agentplane_agent_runs_ended_total", { status: "success" })).toBe(runs);
    expect(moved("agentplane_agent_runs_ended_total", { status: "error" })).toBe(1);
    const durations = after.get("agentplane_agent_run_duration_seconds")!;
    const success = histogramSeries(durations).find((s) => s.labels.status === "success");
    const successBefore = histogramSeries(before.get("agentplane_agent_run_duration_seconds")!).find(
      (s) => s.labels.status === "success",
    );
    expect((success?.count ?? 0) - (successBefore?.count ?? 0)).toBe(runs);
    expectConsistentHistograms(after);

    const http = (labels: Record<string, string>) => moved("agentplane_http_requests_total", labels);
    expect(http({ method: "POST", route: "/threads/{thread_id}/runs/wait", status: "200" })).toBe(runs + 1);
    expect(http({ method: "POST", route: "/threads", status: "200" })).toBe(runs + 1);
    expect(http({ method: "GET", route: "/threads/{thread_id}", status: "404" })).toBe(1);
    // The first scrape was counted once it had been answered.
    expect(http({ method: "GET", route: "/metrics", status: "200" })).toBe(1);
    const waits = histogramSeries(after.get("agentplane_http_request_duration_seconds")!).find(
      (s) => s.labels.route === "/threads/{thread_id}/runs/wait" && s.labels.method === "POST",
    );
    expect(waits?.count).toBeGreaterThanOrEqual(runs + 1);
  });

  it("counts cancelled runs as interrupted, rolled back ones included", async () => {
    const interrupted = (f: Map<string, Family>) =>
      value(f, "agentplane_agent_runs_ended_total", { status: "interrupted" });
    const before = interrupted(await scrape());
    for (const action of ["interrupt", "rollback"] as const) {
      const thread = await r.sdk.threads.create();
      const run = await r.sdk.runs.create(thread.thread_id, "sleepy", { input: { sleep_ms: 60_000 } });
      await waitFor(
        () => r.sdk.runs.get(thread.thread_id, run.run_id),
        (found) => found.status === "running",
      );
      await r.sdk.runs.cancel(thread.thread_id, run.run_id, true, action);
    }
    // The count follows the commit that ended the run, just after the waiting client hears of it.
    await waitFor(scrape, (f) => interrupted(f) - before === 2);
  });

  it("labels requests no route serves as unmatched and RPCs by their procedure", async () => {
    const before = await scrape();
    expect((await fetch(`${r.t.baseUrl}/no/such/${randomUUID()}`)).status).toBe(404);
    const rpc = await fetch(`${r.t.baseUrl}/agentplane.system.v1.SystemService/Ok`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(rpc.status).toBe(200);
    expect(await h2Status("BREW", `/no/such/${randomUUID()}`)).toBe(404);
    const after = await scrape();
    const moved = (labels: Record<string, string>) =>
      value(after, "agentplane_http_requests_total", labels) -
      value(before, "agentplane_http_requests_total", labels);
    expect(moved({ method: "GET", route: "unmatched", status: "404" })).toBe(1);
    // A method of the client's invention does not become a series of its own.
    expect(moved({ method: "other", route: "unmatched", status: "404" })).toBe(1);
    expect(moved({ method: "POST", route: "/agentplane.system.v1.SystemService/Ok", status: "200" })).toBe(1);
  });

  it("counts stream subscribers while a stream is open and busy slots while a run executes", async () => {
    const thread = await r.sdk.threads.create();
    const run = await r.sdk.runs.create(thread.thread_id, "sleepy", { input: { sleep_ms: 3_000 } });
    const stream = r.sdk.runs.joinStream(thread.thread_id, run.run_id);
    const reading = (async () => {
      for await (const _ of stream);
    })();
    const during = await waitFor(
      scrape,
      (f) =>
        value(f, "agentplane_run_stream_subscribers") >= 1 &&
        value(f, "agentplane_agent_run_slots", { state: "busy" }) >= 1 &&
        value(f, "agentplane_agent_runs", { status: "running" }) >= 1,
    );
    expect(value(during, "agentplane_agent_runs", { status: "pending" })).toBe(0);
    await reading;
    const after = await waitFor(scrape, (f) => value(f, "agentplane_run_stream_subscribers") === 0);
    expect(value(after, "agentplane_agent_run_slots", { state: "busy" })).toBe(0);
  });

  it("answers JSON with ?format=json and refuses other formats and parameters with 422", async () => {
    const json = await fetch(`${r.t.baseUrl}/metrics?format=json`);
    expect(json.status).toBe(200);
    const metrics = (await json.json()) as { name: string; type: string }[];
    expect(metrics.find((m) => m.name === "agentplane_agent_runs_ended_total")?.type).toBe("counter");
    const xml = await fetch(`${r.t.baseUrl}/metrics?format=xml`);
    expect(xml.status).toBe(422);
    expect(await xml.json()).toEqual({
      detail: 'format must be one of prometheus, json; got "xml"',
    });
    const unknown = await fetch(`${r.t.baseUrl}/metrics?formats=json`);
    expect(unknown.status).toBe(422);
    expect(((await unknown.json()) as { detail: string }).detail).toContain(
      'unknown query parameter "formats"',
    );
    expect((await fetch(`${r.t.baseUrl}/metrics`, { method: "POST" })).status).toBe(405);
  });
});

describe("GET /metrics across processes", () => {
  it("counts runs in the process that ended them, and reports installation gauges in every process", async () => {
    const api = await startTestApp({
      graphConfigPath: RUNS_GRAPHS,
      databaseUrl: r.t.databaseUrl,
      role: "api",
    });
    try {
      const sdk = sdkClient(api.baseUrl, api.adminKey);
      const [workerBefore, apiBefore] = [await scrape(), await scrape(api.baseUrl)];
      const thread = await sdk.threads.create();
      await sdk.runs.wait(thread.thread_id, "echo", { input: {} });
      const [workerAfter, apiAfter] = [await scrape(), await scrape(api.baseUrl)];
      const ended = (f: Map<string, Family>) =>
        value(f, "agentplane_agent_runs_ended_total", { status: "success" });
      // The api process enqueued the run; the process with workers executed and ended it.
      expect(ended(workerAfter) - ended(workerBefore)).toBe(1);
      expect(ended(apiAfter) - ended(apiBefore)).toBe(0);
      const waits = (f: Map<string, Family>) =>
        value(f, "agentplane_http_requests_total", {
          method: "POST",
          route: "/threads/{thread_id}/runs/wait",
          status: "200",
        });
      expect(waits(apiAfter) - waits(apiBefore)).toBe(1);
      expect(waits(workerAfter) - waits(workerBefore)).toBe(0);
      // An api process runs no workers and has no run slots, but sees the installation's queues.
      expect(apiAfter.get("agentplane_queue_worker_up")?.samples).toEqual([]);
      expect(apiAfter.get("agentplane_agent_run_slots")?.samples).toEqual([]);
      expect(apiAfter.get("agentplane_queue_jobs")?.samples.map((s) => s.labels.queue)).toContain(
        "agent.run",
      );
      expect((await fetch(`${api.baseUrl}/ok`)).status).toBe(200);
    } finally {
      await api.stop();
    }
  });
});

describe("POST /internal/heapdump", () => {
  it("writes a V8 heap snapshot into the data directory for the installation's admin", async () => {
    const res = await r.t.fetch("/internal/heapdump", { method: "POST" });
    expect(res.status).toBe(200);
    const { path } = (await res.json()) as { path: string };
    // Under the test app's data directory (a fresh temporary one).
    expect(path).toMatch(
      new RegExp(`^${tmpdir()}/agentplane-app-[^/]+/heapdumps/heap-[^/]+\\.heapsnapshot$`),
    );
    const file = await open(path);
    try {
      const { mode } = await file.stat();
      expect(mode & 0o777).toBe(0o600);
      const head = Buffer.alloc(200);
      await file.read(head, 0, head.length, 0);
      // A V8 snapshot is one JSON object that starts with its metadata.
      expect(head.toString("utf8")).toMatch(/^\{"snapshot":\{"meta":\{"node_fields":\[/);
    } finally {
      await file.close();
    }
  });

  it("refuses a viewer's key and another organization's admin (403), no key (401), GET (405), a query (422)", async () => {
    const viewer = await r.t.client().iam.apiKeys.createApiKey({
      kind: "service",
      role: "viewer",
      organizationRole: "viewer",
    });
    const denied = await r.t.fetch("/internal/heapdump", { method: "POST", apiKey: viewer.key });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { detail: string }).detail).toContain("admin");
    const foreignAdmin = await foreignOrganizationAdminKey();
    const foreign = await r.t.fetch("/internal/heapdump", { method: "POST", apiKey: foreignAdmin });
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toEqual({
      detail: "permission denied: a heap dump needs an admin key of the installation's organization",
    });
    expect((await r.t.fetch("/internal/heapdump", { method: "POST", apiKey: null })).status).toBe(401);
    expect((await r.t.fetch("/internal/heapdump?gc=1", { method: "POST" })).status).toBe(422);
    expect((await r.t.fetch("/internal/heapdump")).status).toBe(405);
  });
});

describe("GET /ok", () => {
  it("is ok while every worker loop makes progress", async () => {
    const res = await fetch(`${r.t.baseUrl}/ok`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, services: { postgres: "ok", queue: "ok", workers: "ok" } });
  });
});

/** The status of one HTTP/2 (h2c) request with any method, which HTTP/1.1 parsers would refuse. */
async function h2Status(method: string, path: string): Promise<number> {
  const session = connect(r.t.baseUrl);
  try {
    return await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ":method": method, ":path": path });
      stream.on("response", (headers) => resolve(Number(headers[":status"])));
      stream.on("error", reject);
      stream.resume();
      stream.end();
    });
  } finally {
    session.close();
  }
}

/**
 * An admin key of an organization other than the installation's (written below the API: only
 * bootstrap creates organizations): an organization admin, but not the server's.
 */
async function foreignOrganizationAdminKey(): Promise<string> {
  const sql = createSql(r.t.databaseUrl, { max: 1, statementTimeoutMs: 0, applicationName: "metrics-test" });
  try {
    const workspaceId = await createTestWorkspace(sql);
    const [row] = await sql<{ organizationId: string }[]>`
      select organization_id as "organizationId" from workspaces where id = ${workspaceId}`;
    const key = generateApiKey("service");
    await insertApiKey(sql, {
      id: randomUUID(),
      organizationId: row!.organizationId,
      kind: "service",
      userId: null,
      keyHash: hashApiKey(key),
      shortKey: shortApiKey(key),
      description: "foreign admin",
      role: "admin",
      organizationRole: "admin",
      allWorkspaces: true,
      workspaceIds: [],
      defaultWorkspaceId: workspaceId,
      expiresAt: null,
    });
    return key;
  } finally {
    await sql.end();
  }
}
