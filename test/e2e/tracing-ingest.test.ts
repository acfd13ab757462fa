/**
 * Trace ingest and tracing projects through the OFFICIAL `langsmith` SDK against a running server
 * (LANGSMITH_ENDPOINT = <server>/api/v1), then the stored rows read back in SQL.
 */
import { randomUUID } from "node:crypto";
import { RunTree } from "langsmith/run_trees";
import { traceable } from "langsmith/traceable";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSql, type Sql } from "../../server/store/db.js";
import { langsmithClient } from "../support/langsmith-client.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let sql: Sql;
let adminUserId: string;
let adminKeyId: string;

interface RunRow {
  id: string;
  workspace_id: string;
  session_id: string;
  trace_id: string;
  parent_run_id: string | null;
  parent_run_ids: string[];
  name: string;
  run_type: string;
  start_time: Date;
  end_time: Date | null;
  status: string;
  is_root: boolean;
  dotted_order: string;
  inputs: Record<string, unknown> | null;
  outputs: Record<string, unknown> | null;
  error: string | null;
  extra: { metadata?: Record<string, unknown>; runtime?: Record<string, unknown> } | null;
  events: unknown[] | null;
  tags: string[];
  feedback_stats: Record<string, unknown> | null;
  total_tokens: string | null;
  prompt_tokens: string | null;
  completion_tokens: string | null;
  total_cost: string | null;
  first_token_time: Date | null;
  received_at: Date;
  user_id: string | null;
  api_key_id: string | null;
  start_us: string;
}

async function runsOfTrace(traceId: string): Promise<RunRow[]> {
  return sql<RunRow[]>`
    select *, to_char(start_time at time zone 'UTC', 'YYYYMMDD"T"HH24MISSUS') as start_us
    from runs where trace_id = ${traceId} order by dotted_order`;
}

async function projectIdOf(name: string): Promise<string> {
  const [row] = await sql<{ id: string }[]>`select id from tracing_projects where name = ${name}`;
  if (!row) throw new Error(`no project ${name}`);
  return row.id;
}

beforeAll(async () => {
  t = await startTestApp();
  sql = createSql(t.databaseUrl, { max: 2, statementTimeoutMs: 0, applicationName: "tracing-ingest-test" });
  const me = await t.client().iam.identity.whoami({});
  adminUserId = me.user?.id ?? "";
  adminKeyId = me.apiKeyId;
});
afterAll(async () => {
  await sql?.end();
  await t?.stop();
});

describe("GET /api/v1/info", () => {
  it("answers the batch config and the gzip flag the SDK reads, with or without a key", async () => {
    for (const apiKey of [undefined, null]) {
      const res = await t.fetch("/api/v1/info", { apiKey });
      expect(res.status).toBe(200);
      const info = (await res.json()) as Record<string, Record<string, unknown>>;
      expect(info.batch_ingest_config).toMatchObject({ use_multipart_endpoint: true, size_limit: 100 });
      expect(info.instance_flags?.gzip_body_enabled).toBe(true);
      expect(typeof info.version).toBe("string");
    }
  });
});

describe("ingest through the langsmith SDK", () => {
  it("stores a nested traceable trace sent as a gzip multipart stream, every contract column filled", async () => {
    const { client, sent } = langsmithClient(t);
    const project = `multipart-${randomUUID()}`;
    const options = { client, project_name: project, tracingEnabled: true } as const;
    const llm = traceable(
      async (prompt: string) => ({
        text: `echo ${prompt}`,
        usage_metadata: {
          input_tokens: 7,
          output_tokens: 5,
          total_tokens: 12,
          input_cost: 0.5,
          output_cost: 0.25,
        },
      }),
      { ...options, name: "fake-llm", run_type: "llm" },
    );
    const tool = traceable(async (q: string) => (await llm(q)).text, {
      ...options,
      name: "tool",
      run_type: "tool",
    });
    const failing = traceable(
      async () => {
        throw new Error("tool broke");
      },
      { ...options, name: "failing", run_type: "tool" },
    );
    let rootId = "";
    const chain = traceable(
      async (q: string) => {
        await failing().catch(() => undefined);
        return { answer: await tool(q) };
      },
      {
        ...options,
        name: "chain",
        run_type: "chain",
        tags: ["e2e"],
        metadata: { team: "tracing" },
        on_start: (run) => {
          rootId = run?.id ?? "";
        },
      },
    );
    await chain("hi");
    await client.awaitPendingTraceBatches();

    expect(sent.some((s) => s.path === "/api/v1/info")).toBe(true);
    const multipart = sent.filter((s) => s.path === "/api/v1/runs/multipart");
    expect(multipart.length).toBeGreaterThan(0);
    expect(multipart.every((s) => s.status === 202 && s.encoding === "gzip")).toBe(true);

    const rows = await runsOfTrace(rootId);
    expect(rows.map((r) => r.name)).toEqual(["chain", "failing", "tool", "fake-llm"]);
    const [root, failed, toolRun, llmRun] = rows as [RunRow, RunRow, RunRow, RunRow];
    const projectId = await projectIdOf(project);
    const [workspace] = await sql<
      { id: string }[]
    >`select workspace_id as id from tracing_projects where id = ${projectId}`;
    for (const r of rows) {
      expect(r.session_id).toBe(projectId);
      expect(r.workspace_id).toBe(workspace?.id);
      expect(r.trace_id).toBe(root.id);
      expect(r.dotted_order.split(".").at(-1)).toBe(`${r.start_us}Z${r.id}`);
      expect(r.end_time).not.toBeNull();
      expect(r.user_id).toBe(adminUserId);
      expect(r.api_key_id).toBe(adminKeyId);
      expect(r.received_at).toBeInstanceOf(Date);
      expect(r.extra?.runtime?.sdk).toBe("langsmith-js");
    }
    expect(root).toMatchObject({ is_root: true, parent_run_id: null, parent_run_ids: [], status: "success" });
    expect(root.inputs).toEqual({ input: "hi" });
    expect(root.outputs).toEqual({ answer: "echo hi" });
    expect(root.tags).toEqual(["e2e"]);
    expect(root.extra?.metadata?.team).toBe("tracing");
    expect(failed).toMatchObject({
      is_root: false,
      parent_run_id: root.id,
      parent_run_ids: [root.id],
      status: "error",
    });
    expect(failed.error).toContain("tool broke");
    expect(toolRun.parent_run_id).toBe(root.id);
    expect(llmRun).toMatchObject({
      run_type: "llm",
      parent_run_id: toolRun.id,
      parent_run_ids: [root.id, toolRun.id],
      total_tokens: "12",
      prompt_tokens: "7",
      completion_tokens: "5",
      total_cost: "0.75",
    });
    expect(llmRun.extra?.metadata?.usage_metadata).toMatchObject({ total_tokens: 12 });
  });

  it("stores traces through POST /runs/batch when multipart is off, the root patched after its children", async () => {
    const { client, sent } = langsmithClient(t);
    // The switch the SDK itself flips when /runs/multipart answers 404.
    (client as unknown as { _multipartDisabled: boolean })._multipartDisabled = true;
    const project = `batch-${randomUUID()}`;
    const root = new RunTree({
      name: "root",
      run_type: "chain",
      client,
      project_name: project,
      inputs: { q: 1 },
    });
    await root.postRun();
    await client.awaitPendingTraceBatches();
    const child = root.createChild({ name: "stream", run_type: "llm", inputs: { p: "x" } });
    await child.postRun();
    const tokenTime = Date.now();
    child.addEvent({ name: "new_token", time: new Date(tokenTime).toISOString(), kwargs: { token: "a" } });
    await child.end({ text: "a" });
    await child.patchRun();
    await root.end({ done: true });
    await root.patchRun();
    await client.awaitPendingTraceBatches();

    const batches = sent.filter((s) => s.path === "/api/v1/runs/batch");
    expect(batches.length).toBeGreaterThanOrEqual(2);
    expect(batches.every((s) => s.status === 202)).toBe(true);
    expect(sent.some((s) => s.path === "/api/v1/runs/multipart")).toBe(false);
    const [storedRoot, storedChild] = await runsOfTrace(root.id);
    expect(storedRoot).toMatchObject({ status: "success", inputs: { q: 1 }, outputs: { done: true } });
    expect(storedChild).toMatchObject({ status: "success", inputs: { p: "x" }, outputs: { text: "a" } });
    expect(storedChild?.first_token_time?.getTime()).toBe(tokenTime);
  });

  it("stores single runs sent with POST /runs and PATCH /runs/{id} (auto-batching off, epoch-ms times)", async () => {
    const { client, sent } = langsmithClient(t, { autoBatchTracing: false });
    const id = randomUUID();
    const project = `single-${randomUUID()}`;
    await client.createRun({ id, name: "single", run_type: "tool", inputs: { a: 1 }, project_name: project });
    await client.updateRun(id, { outputs: { b: 2 }, end_time: Date.now(), error: "late failure" });
    expect(sent.map((s) => `${s.method} ${s.path} ${s.status}`)).toEqual([
      "POST /api/v1/runs 202",
      `PATCH /api/v1/runs/${id} 202`,
    ]);
    const [row] = await runsOfTrace(id);
    expect(row).toMatchObject({ is_root: true, status: "error", error: "late failure", outputs: { b: 2 } });
    expect(row?.session_id).toBe(await projectIdOf(project));
  });
});

/** A multipart body built the way the JS SDK builds it: `name` and `type; length=` per part. */
function multipart(parts: { name: string; value: unknown; type?: string }[]): {
  body: string;
  boundary: string;
} {
  const boundary = `----LangSmithFormBoundary${randomUUID().slice(0, 8)}`;
  let body = "";
  for (const part of parts) {
    const data = typeof part.value === "string" && part.type ? part.value : JSON.stringify(part.value);
    body += `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"\r\n`;
    body += `Content-Type: ${part.type ?? "application/json"}; length=${data.length}\r\n\r\n${data}\r\n`;
  }
  return { body: `${body}--${boundary}--\r\n`, boundary };
}

function postMultipart(parts: Parameters<typeof multipart>[0]): Promise<Response> {
  const { body, boundary } = multipart(parts);
  return t.fetch("/api/v1/runs/multipart", {
    method: "POST",
    body,
    headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
  });
}

function stamp(date: Date, micros = "000"): string {
  return `${date.toISOString().replace(/[-:]/g, "").replace(".", "").slice(0, -1)}${micros}`;
}

describe("ingest semantics", () => {
  it("stores a multipart document as its text says, integers beyond 2^53 included", async () => {
    const id = randomUUID();
    const start = new Date(Date.now() - 1000);
    // Spacing, an escape and a 20-digit integer, which a parse and re-serialization would round.
    const inputs = '{ "count" : 12345678901234567890, "city": "Z\\u00fcrich", "ratio": 2.50 }';
    const sent = await postMultipart([
      {
        name: `post.${id}`,
        value: {
          id,
          dotted_order: `${stamp(start)}Z${id}`,
          name: "exact",
          run_type: "chain",
          session_name: "exact",
        },
      },
      { name: `post.${id}.inputs`, value: inputs, type: "application/json" },
    ]);
    expect(sent.status).toBe(202);
    const [row] = await sql<{ count: string; city: string; ratio: string }[]>`
      select inputs->>'count' as count, inputs->>'city' as city, inputs->>'ratio' as ratio
      from runs where id = ${id}`;
    expect(row).toEqual({ count: "12345678901234567890", city: "Zürich", ratio: "2.50" });
  });

  it("merges a patch that arrives before its post, stores feedback and attachments, and duplicates nothing on re-send", async () => {
    const id = randomUUID();
    const start = new Date(Date.now() - 1000);
    const dotted = `${stamp(start)}Z${id}`;
    const common = { id, trace_id: id, dotted_order: dotted, session_name: "merge" };
    const patch = [
      { name: `patch.${id}`, value: { ...common, end_time: Date.now() } },
      { name: `patch.${id}.outputs`, value: { answer: 42 } },
    ];
    const post = [
      {
        name: `post.${id}`,
        value: { ...common, name: "merged", run_type: "chain", start_time: start.toISOString() },
      },
      { name: `post.${id}.inputs`, value: { question: "?" } },
      { name: `attachment.${id}.notes`, value: "plain text", type: "text/plain" },
      {
        name: `feedback.${randomUUID()}`,
        value: { run_id: id, trace_id: id, key: "correct", score: 1, value: "yes" },
      },
    ];
    expect((await postMultipart(patch)).status).toBe(202);
    const [first] = await runsOfTrace(id);
    expect(first).toMatchObject({ status: "success", outputs: { answer: 42 }, inputs: null });
    expect((await postMultipart(post)).status).toBe(202);
    expect((await postMultipart(post)).status).toBe(202);
    expect((await postMultipart(patch)).status).toBe(202);

    const rows = await runsOfTrace(id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      name: "merged",
      run_type: "chain",
      status: "success",
      inputs: { question: "?" },
      outputs: { answer: 42 },
      feedback_stats: { correct: { n: 1, avg: 1, values: { yes: 1 } } },
    });
    const [attachment] = await sql<{ size_bytes: number; content_type: string }[]>`
      select size_bytes, content_type from run_attachments where run_id = ${id}`;
    expect(attachment).toEqual({ size_bytes: 10, content_type: "text/plain" });
  });

  it("rejects a bad dotted_order with the reference's message and stores nothing of the batch", async () => {
    const good = randomUUID();
    const bad = randomUUID();
    const now = new Date();
    const res = await t.fetch("/api/v1/runs/batch", {
      method: "POST",
      body: JSON.stringify({
        post: [
          {
            id: good,
            name: "ok",
            run_type: "chain",
            dotted_order: `${stamp(now)}Z${good}`,
            session_name: "bad",
          },
          {
            id: bad,
            name: "bad",
            run_type: "chain",
            dotted_order: `${stamp(now).slice(0, -3)}Z${bad}`,
            session_name: "bad",
          },
        ],
      }),
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: string }).detail).toBe(
      `run ${bad}: invalid timestamp format in dotted_order: cannot parse '.${stamp(now).slice(15, 18)}' as '.000000'`,
    );
    expect(await sql`select id from runs where id in (${good}, ${bad})`).toHaveLength(0);

    const child = randomUUID();
    const res2 = await t.fetch("/api/v1/runs/batch", {
      method: "POST",
      body: JSON.stringify({
        post: [
          {
            id: child,
            parent_run_id: good,
            name: "c",
            run_type: "tool",
            dotted_order: `${stamp(now)}Z${child}`,
          },
        ],
      }),
    });
    expect(res2.status).toBe(422);
    expect(((await res2.json()) as { detail: string }).detail).toContain(
      "dotted_order must contain at least two parts for child runs for run_id:",
    );
  });

  it("answers 422, storing nothing, for a run whose inputs Postgres cannot store", async () => {
    const now = new Date();
    const ok = randomUUID();
    const nul = randomUUID();
    const run = (id: string, inputs: unknown) => ({
      id,
      name: "r",
      run_type: "chain",
      dotted_order: `${stamp(now)}Z${id}`,
      session_name: "unstorable",
      inputs,
    });
    const res = await t.fetch("/api/v1/runs/batch", {
      method: "POST",
      body: JSON.stringify({ post: [run(ok, { q: "fine" }), run(nul, { q: "nul \u0000 here" })] }),
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: string }).detail).toBe(
      'field "post[1].inputs.q" contains the NUL character (\\u0000), which cannot be stored',
    );
    expect(await sql`select id from runs where id in (${ok}, ${nul})`).toHaveLength(0);
  });

  it("answers malformed multipart bodies with 4xx and a detail", async () => {
    const cases: [string, RequestInit, number][] = [
      ["no boundary", { body: "x", headers: { "content-type": "multipart/form-data" } }, 422],
      [
        "truncated",
        {
          body: '--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n{}',
          headers: { "content-type": "multipart/form-data; boundary=b" },
        },
        422,
      ],
      [
        "bad gzip",
        {
          body: "nope",
          headers: { "content-type": "multipart/form-data; boundary=b", "content-encoding": "gzip" },
        },
        400,
      ],
    ];
    for (const [, init, status] of cases) {
      const res = await t.fetch("/api/v1/runs/multipart", { method: "POST", ...init });
      expect(res.status).toBe(status);
      expect(typeof ((await res.json()) as { detail: unknown }).detail).toBe("string");
    }
    const noKey = await t.fetch("/api/v1/runs/batch", { method: "POST", body: "{}", apiKey: null });
    expect(noKey.status).toBe(401);
  });
});
