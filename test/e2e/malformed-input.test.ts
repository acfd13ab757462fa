/**
 * The fuzz test: every REST route of every service in gen/ (from the google.api.http options, so
 * routes added later are covered without editing this file) and every route of the REST-only
 * adapters (from their list) gets malformed input of every kind the server must refuse cleanly:
 * deep nesting, NUL and lone surrogates in every string position and member name, in path and
 * query values, wrong types, huge and negative numbers, far-past and far-future dates, bad escapes,
 * bad request targets, truncated and invalid JSON and gzip, bad multipart bodies. Requests go over
 * raw sockets, byte for byte. The assertion: no 5xx and no connection reset, ever; a failure prints
 * every failing request. Deterministic: a fixed seed picks the variants.
 */
import { gzipSync } from "node:zlib";
import type { DescField, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Route } from "../../server/transport/rest/route-table.js";
import { adapterRoutes, rpcRoutes } from "../support/hostile-input/api-routes.js";
import { multipartProbes, sampleRun, serverWideProbes } from "../support/hostile-input/ingest-probes.js";
import { SAMPLE_UUID, sampleField, sampleMessage } from "../support/hostile-input/json-sample.js";
import { describeRaw, type RawOutcome, type RawRequest, sendRaw } from "../support/hostile-input/raw-http.js";
import { type FuzzRoute, probesOf } from "../support/hostile-input/route-probes.js";
import { seededRandom } from "../support/hostile-input/seeded-random.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** The seed of the variant choices; change it to explore other variants. */
const SEED = 0x5eed_0008;
/** Requests in flight at once: enough to overlap round trips, few enough for a 2-core CI machine. */
const CONCURRENCY = 8;
/** A request unanswered this long counts as a failure: the server hangs on it. */
const ANSWER_TIMEOUT_MS = 10_000;

let t: TestApp;
let port: number;
/** Real resources, so that hostile input reaches the code behind a successful lookup. */
const known: Record<string, string> = {};

beforeAll(async () => {
  t = await startTestApp();
  port = Number(new URL(t.baseUrl).port);
  const json = async (path: string, init: RequestInit): Promise<JsonObject> => {
    const res = await t.fetch(path, init);
    if (!res.ok) throw new Error(`${init.method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as JsonObject;
  };
  const whoami = await json("/api/v1/whoami", { method: "GET" });
  known.workspace_id = String((whoami.workspace as JsonObject | undefined)?.id ?? "");
  known.assistant_id = String((await json("/assistants", post({ graph_id: "agent" }))).assistant_id);
  known.thread_id = String((await json("/threads", post({}))).thread_id);
  known.session_id = String((await json("/api/v1/sessions", post({ name: "fuzz" }))).id);
  known.run_id = "0190f3a2-7c1e-7a55-9f1e-3c7e2a1b4d60";
  await json("/api/v1/runs/batch", post({ post: [sampleRun(known.run_id)] }));
});

afterAll(async () => {
  await t?.stop();
});

function post(body: JsonValue): RequestInit {
  return { method: "POST", body: JSON.stringify(body) };
}

it("answers every malformed request with a 4xx, never a 5xx or a reset", { timeout: 120_000 }, async () => {
  const random = seededRandom(SEED);
  // 40 MiB of zeros is 40 KiB gzipped: a body that stays small on the wire and is over every limit unpacked.
  const gzipBomb = gzipSync(Buffer.alloc(40 * 1024 * 1024));
  const headers = { "x-api-key": t.adminKey };
  const probes: RawRequest[] = [];
  for (const route of await rpcRoutes())
    probes.push(...probesOf(rpcFuzzRoute(route, headers), random, gzipBomb));
  for (const route of adapterRoutes()) {
    const fuzzRoute = adapterFuzzRoute(route.method, route.path, headers);
    probes.push(...probesOf(fuzzRoute, random, gzipBomb));
    if (route.method === "POST" && route.path.endsWith("/multipart")) {
      probes.push(...multipartProbes(route.path, headers, known.run_id!, gzipBomb));
    }
  }
  probes.push(...serverWideProbes(headers));

  const failures: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < probes.length) {
      const probe = probes[next++]!;
      const outcome = await sendRaw(port, probe, ANSWER_TIMEOUT_MS);
      const problem = problemOf(outcome);
      if (problem) failures.push(`${describeRaw(probe)}\n    → ${problem}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  expect(failures, `${failures.length} of ${probes.length} requests failed:\n${failures.join("\n")}`).toEqual(
    [],
  );
  // The server is still healthy after all of it.
  expect((await t.fetch("/ok")).status).toBe(200);
});

function problemOf(outcome: RawOutcome): string | undefined {
  switch (outcome.kind) {
    case "answered":
      return outcome.status >= 500 ? `${outcome.status} ${JSON.stringify(outcome.body)}` : undefined;
    case "reset":
      return `connection reset before an answer (${outcome.detail})`;
    case "closed":
      return `connection closed without an answer (${JSON.stringify(outcome.received)})`;
    case "timeout":
      return `no answer within ${ANSWER_TIMEOUT_MS} ms`;
  }
}

/** Values by field name for fields whose plausible value is a real resource or a valid range. */
function overrides(): Record<string, string> {
  return {
    ...known,
    workspace_ids: known.workspace_id!,
    graph_id: "agent",
    start_time: "2024-05-01T00:00:00Z",
    end_time: "2024-05-08T00:00:00Z",
  };
}

/** Replaces, at any depth, string members named like a key of `values`. */
function withOverrides(value: JsonValue, values: Record<string, string>): JsonValue {
  if (Array.isArray(value)) return value.map((item) => withOverrides(item, values));
  if (value === null || typeof value !== "object") return value;
  const out: JsonObject = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] =
      typeof item === "string" && values[key] !== undefined ? values[key] : withOverrides(item, values);
  }
  return out;
}

function rpcFuzzRoute(route: Route, headers: Record<string, string>): FuzzRoute {
  const values = overrides();
  const destructive = route.httpMethod === "DELETE";
  const pathValues: Record<string, string> = {};
  const bound = new Set<DescField>();
  for (const binding of route.pathBindings) {
    const name = binding.variable.fieldPath;
    for (const field of binding.fields) bound.add(field);
    const leaf = binding.fields[binding.fields.length - 1]!;
    // Never a real id where a request could delete or demote what the rest of the run needs.
    const real = destructive || name === "user_id" || name === "api_key_id" ? undefined : values[name];
    pathValues[name] = encodeURIComponent(real ?? String(sampleField(leaf)));
  }
  const input = route.method.input;
  let body: JsonValue | undefined;
  const query: [string, string][] = [];
  if (route.body.kind === "all") {
    const sample = sampleMessage(input);
    for (const field of bound) delete sample[field.name];
    body = withOverrides(sample, values);
  } else {
    const bodyField = route.body.kind === "field" ? route.body.field : undefined;
    if (bodyField) body = withOverrides(sampleField(bodyField), values);
    for (const field of input.fields) {
      if (field === bodyField || bound.has(field)) continue;
      const value = withOverrides({ [field.name]: sampleField(field) }, values) as JsonObject;
      for (const item of [value[field.name]].flat()) {
        if (item !== null && typeof item !== "object") query.push([field.name, String(item)]);
      }
    }
  }
  return {
    name: `${route.httpMethod} ${route.template.text}`,
    method: route.httpMethod,
    template: route.template.text,
    pathValues,
    query,
    body,
    headers,
  };
}

/** Plausible input of the adapter routes this test knows; generic input for any other. */
function adapterFuzzRoute(method: string, path: string, headers: Record<string, string>): FuzzRoute {
  const values = overrides();
  const pathValues: Record<string, string> = {};
  for (const [, name] of path.matchAll(/\{([^}=]+)\}/g)) pathValues[name!] = values[name!] ?? SAMPLE_UUID;
  let body: JsonValue | undefined = ["POST", "PUT", "PATCH"].includes(method) ? { note: "x" } : undefined;
  let query: [string, string][] = [];
  if (path.endsWith("/runs/batch")) body = { post: [sampleRun(known.run_id!)], patch: [] };
  else if (path.endsWith("/runs") || path.endsWith("/runs/{run_id}")) body = sampleRun(known.run_id!);
  else if (path.endsWith("/granular-usage/export")) {
    query = [
      ["start_time", values.start_time!],
      ["end_time", values.end_time!],
      ["workspace_ids", values.workspace_id!],
      ["group_by", "project"],
    ];
  }
  return { name: `${method} ${path}`, method, template: path, pathValues, query, body, headers };
}
