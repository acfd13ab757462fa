/**
 * OTLP trace ingest through the OFFICIAL OpenTelemetry exporters (0.223.x: OTLP/HTTP protobuf,
 * OTLP/HTTP JSON, OTLP/gRPC) against a running server, read back as a user reads traces: the
 * `langsmith` SDK's listRuns() and v2 runs.query(), a bulk export read with DuckDB, and the
 * granular usage API.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Client, type Run } from "langsmith";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ExportTraceServiceRequestSchema,
  ExportTraceServiceResponseSchema,
} from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import {
  createS3Destination,
  downloadPrefix,
  duckdb,
  restJson,
  waitForExportStatus,
} from "../support/bulk-export-fixtures.js";
import {
  type OtlpProtocol,
  otelSender,
  runIdOf,
  type SentSpans,
  sendAgentTrace,
  sendOpenInferenceTrace,
} from "../support/otel-traces.js";
import { type S3Server, startS3Server } from "../support/s3-server.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const BUCKET = "otlp";
let t: TestApp;
let s3: S3Server;
let client: Client;
const began = new Date(Date.now() - 60_000);

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  t = await startTestApp();
  client = new Client({ apiUrl: `${t.baseUrl}/api/v1`, apiKey: t.adminKey });
});
afterAll(async () => {
  await t?.stop();
  await s3?.stop();
});

async function listRuns(projectName: string): Promise<Run[]> {
  const runs: Run[] = [];
  for await (const run of client.listRuns({ projectName })) runs.push(run);
  return runs;
}

/** Sends one agent trace with the exporter of `protocol` into a new project; returns both. */
async function sendWith(
  protocol: OtlpProtocol,
  options: { path?: string; simple?: boolean; compression?: "gzip" } = {},
): Promise<{ project: string; spans: SentSpans }> {
  const project = `otlp-${protocol.replace("/", "-")}-${randomUUID()}`;
  const sender = otelSender({
    baseUrl: t.baseUrl,
    protocol,
    headers: { "x-api-key": t.adminKey, "Langsmith-Project": project },
    ...options,
  });
  const spans = await sendAgentTrace(sender.tracer, "weather in Paris?");
  await sender.close();
  return { project, spans };
}

function byId(runs: readonly Run[], spanId: string): Run {
  const run = runs.find((r) => r.id === runIdOf(spanId));
  if (!run) throw new Error(`no run for span ${spanId}`);
  return run;
}

/** What every exporter's agent trace reads back as. */
function expectAgentTrace(runs: readonly Run[], spans: SentSpans): void {
  expect(runs).toHaveLength(3);
  const chain = byId(runs, spans.chain);
  const llm = byId(runs, spans.llm);
  const tool = byId(runs, spans.tool);
  expect(chain).toMatchObject({
    name: "agent",
    run_type: "chain",
    trace_id: chain.id,
    inputs: { question: "weather in Paris?" },
    outputs: { answer: "no weather today" },
    status: "success",
    total_tokens: 12,
  });
  expect(chain.parent_run_id ?? null).toBeNull();
  expect([...(chain.tags ?? [])].sort()).toEqual(["agent", "otel"]);
  expect(chain.extra?.metadata).toMatchObject({ user: "u-1", turn: "1" });
  expect(llm).toMatchObject({
    name: "chat gpt-4o-mini",
    run_type: "llm",
    trace_id: chain.id,
    parent_run_id: chain.id,
    prompt_tokens: 7,
    completion_tokens: 5,
    total_tokens: 12,
    inputs: { messages: [{ role: "user", content: "weather in Paris?" }] },
    outputs: { messages: [{ role: "assistant", content: "call the weather tool" }] },
  });
  expect(llm.extra?.metadata).toMatchObject({
    ls_provider: "openai",
    ls_model_name: "gpt-4o-mini-2024-07-18",
    ls_temperature: 0.2,
  });
  expect(llm.extra?.otel).toMatchObject({
    trace_id: spans.traceId,
    span_id: spans.llm,
    parent_span_id: spans.chain,
    kind: "INTERNAL",
    scope: { name: "agentplane-tests", version: "1.0.0" },
    resource: { "service.name": "otlp-test" },
    // What no convention reads stays, under its own name.
    attributes: { "http.response.status_code": 200, "gen_ai.request.model": "gpt-4o-mini" },
  });
  expect(tool).toMatchObject({
    name: "get_weather",
    run_type: "tool",
    parent_run_id: chain.id,
    inputs: { city: "Paris" },
    status: "error",
  });
  expect(tool.error).toContain("weather service down");
  expect(tool.error).toContain("TypeError");
  for (const run of runs) {
    expect(run.dotted_order?.startsWith(chain.dotted_order ?? "?")).toBe(true);
    expect(Date.parse(String(run.end_time))).toBeGreaterThanOrEqual(Date.parse(String(run.start_time)));
  }
}

describe("the official OTLP exporters", () => {
  const sent: Record<string, { project: string; spans: SentSpans }> = {};

  beforeAll(async () => {
    // Children reach the server before their parent here: one request per span as it ends.
    sent.proto = await sendWith("http/protobuf", { simple: true, compression: "gzip" });
    sent.json = await sendWith("http/json", { path: "/api/v1/otel/v1/traces" });
    sent.bare = await sendWith("http/protobuf", { path: "/v1/traces" });
    sent.grpc = await sendWith("grpc", { compression: "gzip" });
  });

  it.each(["proto", "json", "bare", "grpc"])("%s: stores the trace as LangSmith maps it", async (name) => {
    const { project, spans } = sent[name] as { project: string; spans: SentSpans };
    expectAgentTrace(await listRuns(project), spans);
  });

  it("reads back through the v2 run query", async () => {
    const { project, spans } = sent.grpc as { project: string; spans: SentSpans };
    const [projectRecord] = await restJson(t.fetch, `/api/v1/sessions?name=${project}`).then((r) => r.body);
    const runs = [];
    for await (const run of client.runs.query({
      project_ids: [String((projectRecord as { id: string }).id)],
      min_start_time: began.toISOString(),
      run_type: "LLM",
      selects: ["ID", "NAME", "TOTAL_TOKENS", "LATENCY_SECONDS"],
    })) {
      runs.push(run);
    }
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ id: runIdOf(spans.llm), name: "chat gpt-4o-mini", total_tokens: 12 });
    expect(runs[0]?.latency_seconds).toBeGreaterThanOrEqual(0);
  });

  it("counts one trace per export in granular usage", async () => {
    const workspace = await t.client().iam.workspaces.getCurrentWorkspace({});
    const query = new URLSearchParams({
      start_time: new Date(Date.now() - 86_400_000).toISOString(),
      end_time: new Date(Date.now() + 86_400_000).toISOString(),
      workspace_ids: workspace.id,
      group_by: "project",
    });
    const { body } = await restJson(t.fetch, `/api/v1/orgs/current/billing/granular-usage?${query}`);
    const usage = body.usage as unknown as { dimensions: { project_name: string }; traces: number }[];
    for (const { project } of Object.values(sent)) {
      const traces = usage
        .filter((u) => u.dimensions.project_name === project)
        .reduce((n, u) => n + u.traces, 0);
      expect(traces, project).toBe(1);
    }
  });

  it("exports the trace in bulk, as DuckDB reads the Parquet", async () => {
    const { project } = sent.proto as { project: string; spans: SentSpans };
    const [projectRecord] = await restJson(t.fetch, `/api/v1/sessions?name=${project}`).then((r) => r.body);
    const destination = await createS3Destination(t.fetch, s3, { bucket: BUCKET, prefix: "otlp" });
    const created = await restJson(t.fetch, "/api/v1/bulk-exports", {
      method: "POST",
      body: JSON.stringify({
        bulk_export_destination_id: destination,
        session_id: (projectRecord as { id: string }).id,
        start_time: new Date(Date.now() - 86_400_000).toISOString(),
        end_time: new Date(Date.now() + 86_400_000).toISOString(),
        format_version: "v2_beta",
      }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const done = await waitForExportStatus(t.fetch, String(created.body.id), ["Completed", "Failed"]);
    expect(done.status).toBe("Completed");
    const { dir } = await downloadPrefix(s3, BUCKET, `otlp/export_id=${created.body.id}/`);
    const rows = await duckdb(
      `select name, run_type, total_tokens::int as tokens, epoch_ms(end_time) - epoch_ms(start_time) >= 0 as forward
       from read_parquet('${join(dir, "**", "*.parquet")}', hive_partitioning = true) order by name`,
    );
    expect(rows).toEqual([
      { name: "agent", run_type: "chain", tokens: 12, forward: true },
      { name: "chat gpt-4o-mini", run_type: "llm", tokens: 12, forward: true },
      { name: "get_weather", run_type: "tool", tokens: null, forward: true },
    ]);
  });
});

describe("OpenInference spans", () => {
  it("map to runs: kinds, input and output values, messages, token counts, metadata and tags", async () => {
    const project = `openinference-${randomUUID()}`;
    const sender = otelSender({
      baseUrl: t.baseUrl,
      protocol: "http/json",
      headers: { "x-api-key": t.adminKey, "Langsmith-Project": project },
    });
    const spans = await sendOpenInferenceTrace(sender.tracer);
    await sender.close();
    const runs = await listRuns(project);
    expect(runs).toHaveLength(2);
    const chain = byId(runs, spans.chain);
    const llm = byId(runs, spans.llm);
    expect(chain).toMatchObject({
      run_type: "chain",
      inputs: { query: "what is OTLP?" },
      outputs: { output: "a protocol" },
    });
    expect(chain.extra?.metadata).toMatchObject({ session_id: "session-7", team: "search" });
    expect([...(chain.tags ?? [])].sort()).toEqual(["prod", "rag"]);
    expect(llm).toMatchObject({
      run_type: "llm",
      parent_run_id: chain.id,
      prompt_tokens: 11,
      completion_tokens: 4,
      total_tokens: 15,
      inputs: {
        messages: [
          { role: "system", content: "be brief" },
          { role: "user", content: "what is OTLP?" },
        ],
      },
      outputs: { messages: [{ role: "assistant", content: "a protocol" }] },
    });
    expect(llm.extra?.metadata).toMatchObject({
      ls_model_name: "claude-sonnet",
      ls_provider: "anthropic",
      invocation_params: { temperature: 0 },
    });
  });
});

/** A span of the OTLP JSON encoding. */
function jsonSpan(
  traceId: string,
  spanId: string,
  parentSpanId: string | undefined,
  name: string,
  startMs: number,
) {
  return {
    traceId,
    spanId,
    ...(parentSpanId ? { parentSpanId } : {}),
    name,
    kind: 1,
    startTimeUnixNano: `${BigInt(startMs) * 1_000_000n + 123_456n}`,
    endTimeUnixNano: `${BigInt(startMs + 5) * 1_000_000n}`,
    attributes: [{ key: "langsmith.span.kind", value: { stringValue: "tool" } }],
  };
}

function jsonExport(spans: unknown[]): string {
  return JSON.stringify({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans }] }] });
}

function hex(bytes: number): string {
  return randomUUID()
    .replaceAll("-", "")
    .slice(0, bytes * 2);
}

async function post(body: BodyInit, headers: Record<string, string>, path = "/otel/v1/traces") {
  return t.fetch(path, { method: "POST", body, headers });
}

describe("OTLP/HTTP answers", () => {
  it("stores a span sent before its parent, and links it when the parent comes", async () => {
    const project = `orphans-${randomUUID()}`;
    const [traceId, root, child, grandchild] = [hex(16), hex(8), hex(8), hex(8)];
    const headers = { "content-type": "application/json", "Langsmith-Project": project };
    const now = Date.now();
    expect(
      (await post(jsonExport([jsonSpan(traceId, grandchild, child, "grandchild", now + 2)]), headers)).status,
    ).toBe(200);
    expect((await post(jsonExport([jsonSpan(traceId, child, root, "child", now + 1)]), headers)).status).toBe(
      200,
    );
    expect(await listRuns(project).catch(() => [])).toEqual([]);
    expect((await post(jsonExport([jsonSpan(traceId, root, undefined, "root", now)]), headers)).status).toBe(
      200,
    );
    const runs = await listRuns(project);
    const [r, c, g] = [root, child, grandchild].map((id) => byId(runs, id as string));
    expect(c?.parent_run_id).toBe(r?.id);
    expect(g?.parent_run_id).toBe(c?.id);
    expect(g?.trace_id).toBe(r?.id);
    expect(g?.dotted_order?.startsWith(`${c?.dotted_order}.`)).toBe(true);
    // Kept to the microsecond: 123.456 µs after the millisecond, cut to 123 µs.
    expect(String(g?.start_time)).toMatch(/\.\d{3}123/);
  });

  it("refuses only the spans it cannot store, and says which (partial success)", async () => {
    const project = `partial-${randomUUID()}`;
    const traceId = hex(16);
    const good = hex(8);
    const res = await post(
      jsonExport([
        jsonSpan(traceId, good, undefined, "good", Date.now()),
        jsonSpan(traceId, "not-hex", undefined, "bad", Date.now()),
      ]),
      { "content-type": "application/json", "Langsmith-Project": project },
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { partialSuccess?: { rejectedSpans: string; errorMessage: string } };
    expect(body.partialSuccess?.rejectedSpans).toBe("1");
    expect(body.partialSuccess?.errorMessage).toContain("span_id must be 8 bytes");
    expect((await listRuns(project)).map((r) => r.name)).toEqual(["good"]);
  });

  it("places a span under a parent an earlier request stored, in the project of its own request", async () => {
    const [traceId, root, child] = [hex(16), hex(8), hex(8)];
    const [first, second] = [`stored-parent-${randomUUID()}`, `stored-child-${randomUUID()}`];
    const now = Date.now();
    const json = { "content-type": "application/json" };
    expect(
      (
        await post(jsonExport([jsonSpan(traceId, root, undefined, "root", now)]), {
          ...json,
          "Langsmith-Project": first,
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await post(jsonExport([jsonSpan(traceId, child, root, "child", now + 1)]), {
          ...json,
          "Langsmith-Project": second,
        })
      ).status,
    ).toBe(200);
    const [r] = await listRuns(first);
    const [c] = await listRuns(second);
    expect(c).toMatchObject({ name: "child", parent_run_id: r?.id, trace_id: r?.id });
    expect(c?.dotted_order?.startsWith(`${r?.dotted_order}.`)).toBe(true);
  });

  it("links waiting spans sent to another project than their parent's, each in its own", async () => {
    const [traceId, root, child] = [hex(16), hex(8), hex(8)];
    const [rootProject, childProject] = [`linked-root-${randomUUID()}`, `linked-child-${randomUUID()}`];
    const now = Date.now();
    const json = { "content-type": "application/json" };
    await post(jsonExport([jsonSpan(traceId, child, root, "child", now + 1)]), {
      ...json,
      "Langsmith-Project": childProject,
    });
    await post(jsonExport([jsonSpan(traceId, root, undefined, "root", now)]), {
      ...json,
      "Langsmith-Project": rootProject,
    });
    const [r] = await listRuns(rootProject);
    expect((await listRuns(childProject)).map((run) => [run.name, run.parent_run_id])).toEqual([
      ["child", r?.id],
    ]);
  });

  it("refuses only the spans holding what cannot be stored: a NUL, raw or escaped in an attribute's JSON", async () => {
    const project = `unstorable-${randomUUID()}`;
    const traceId = Buffer.from(hex(16), "hex");
    const text = (key: string, value: string) => ({
      key,
      value: { value: { case: "stringValue" as const, value } },
    });
    const span = (name: string, attributes: ReturnType<typeof text>[]) => ({
      traceId,
      spanId: Buffer.from(hex(8), "hex"),
      name,
      startTimeUnixNano: BigInt(Date.now()) * 1_000_000n,
      endTimeUnixNano: BigInt(Date.now() + 1) * 1_000_000n,
      attributes,
    });
    const body = toBinary(
      ExportTraceServiceRequestSchema,
      create(ExportTraceServiceRequestSchema, {
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  span("good", [text("input.value", '{"q":"fine"}')]),
                  span("escaped", [text("input.value", '{"q":"a\\u0000b"}')]),
                  span("raw", [text("note", "a\u0000b")]),
                ],
              },
            ],
          },
        ],
      }),
    );
    const res = await post(body, { "content-type": "application/x-protobuf", "Langsmith-Project": project });
    expect(res.status).toBe(200);
    const answer = fromBinary(ExportTraceServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
    expect(answer.partialSuccess?.rejectedSpans).toBe(2n);
    expect(answer.partialSuccess?.errorMessage).toMatch(/attribute "input.value": .*NUL/);
    expect(answer.partialSuccess?.errorMessage).toMatch(/attribute "note" contains the NUL character/);
    const runs = await listRuns(project);
    expect(runs.map((r) => [r.name, r.inputs])).toEqual([["good", { q: "fine" }]]);

    // The same spans through the official gRPC exporter (the hand-written decoder's other path).
    const overGrpc = `unstorable-grpc-${randomUUID()}`;
    const sender = otelSender({
      baseUrl: t.baseUrl,
      protocol: "grpc",
      headers: { "x-api-key": t.adminKey, "Langsmith-Project": overGrpc },
    });
    sender.tracer.startSpan("good", { attributes: { "input.value": '{"q":"fine"}' } }).end();
    sender.tracer.startSpan("escaped", { attributes: { "input.value": '{"q":"a\\u0000b"}' } }).end();
    sender.tracer.startSpan("raw", { attributes: { note: "a\u0000b" } }).end();
    await sender.close();
    expect((await listRuns(overGrpc)).map((r) => r.name)).toEqual(["good"]);
  });

  it("answers 400 for a body that does not decode, 415 for another content type, and stores nothing", async () => {
    const bad = await post(Buffer.from([0x0a, 0xff, 0xff, 0xff]), {
      "content-type": "application/x-protobuf",
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { detail: string }).detail).toContain("protobuf");
    expect((await post("{not json", { "content-type": "application/json" })).status).toBe(400);
    const text = await post("hello", { "content-type": "text/plain" });
    expect(text.status).toBe(415);
    expect(((await text.json()) as { detail: string }).detail).toContain("application/x-protobuf");
    const project = `refused-${randomUUID()}`;
    const agent = await post(jsonExport([jsonSpan(hex(16), hex(8), undefined, "x", Date.now())]), {
      "content-type": "application/json",
      "Langsmith-Agent-Id": "Not A Label",
      "Langsmith-Agent-Environment": "production",
      "Langsmith-Project-Unused": project,
    });
    expect(agent.status).toBe(422);
    const sessions = await restJson(t.fetch, `/api/v1/sessions?name=${project}`);
    expect(sessions.body).toEqual([]);
  });

  it("takes gzip bodies, needs a key, and files spans of an agent under its project", async () => {
    const body = gzipSync(jsonExport([jsonSpan(hex(16), hex(8), undefined, "zipped", Date.now())]));
    const headers = {
      "content-type": "application/json",
      "content-encoding": "gzip",
      "Langsmith-Agent-Id": "support-bot",
      "Langsmith-Agent-Environment": "Production",
    };
    expect((await t.fetch("/v1/traces", { method: "POST", body, headers, apiKey: null })).status).toBe(401);
    expect((await post(body, headers, "/v1/traces")).status).toBe(200);
    expect((await listRuns("support-bot/production")).map((r) => r.name)).toContain("zipped");
  });
});
