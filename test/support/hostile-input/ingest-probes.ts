import { gzipSync } from "node:zlib";
import type { JsonObject } from "@bufbuild/protobuf";
import { nestedObjects } from "./hostile-values.js";
import type { RawRequest } from "./raw-http.js";

/**
 * Trace-ingest specifics the descriptors cannot describe: a run as the langsmith SDK sends it, and
 * hostile `multipart/form-data` bodies for `POST /api/v1/runs/multipart`.
 */

/** A root run the ingest routes accept as is. */
export function sampleRun(id: string): JsonObject {
  return {
    id,
    trace_id: id,
    dotted_order: `20240506T070809000000Z${id}`,
    name: "fuzz",
    run_type: "chain",
    start_time: "2024-05-06T07:08:09.000000Z",
    end_time: "2024-05-06T07:08:10.000000Z",
    inputs: { question: "x" },
    outputs: { answer: "y", usage_metadata: { input_tokens: 1, output_tokens: 2, total_tokens: 3 } },
    extra: { metadata: { key: "value" } },
    tags: ["t"],
    session_name: "fuzz",
    events: [{ name: "start", time: "2024-05-06T07:08:09.000000Z" }],
    serialized: { name: "x" },
  };
}

interface Part {
  readonly name: string;
  readonly body: string | Buffer;
  /** Content-Type; null sends none. */
  readonly type?: string | null;
  /** Declared length; null declares none, undefined declares the true length. */
  readonly length?: number | string | null;
  /** Extra part headers. */
  readonly headers?: readonly string[];
}

const BOUNDARY = "fuzz-boundary-7a55";

/** A multipart body of `parts`, framed as the JS SDK frames it. */
function multipartBody(parts: readonly Part[], options: { close?: boolean } = {}): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const body = Buffer.from(part.body);
    const length = part.length === undefined ? body.length : part.length;
    const type = part.type === undefined ? "application/json" : part.type;
    const lines = [`--${BOUNDARY}`, `Content-Disposition: form-data; name="${part.name}"`];
    if (type !== null) lines.push(`Content-Type: ${type}${length === null ? "" : `; length=${length}`}`);
    lines.push(...(part.headers ?? []));
    chunks.push(Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), body, Buffer.from("\r\n"));
  }
  if (options.close !== false) chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

/** Hostile multipart bodies for the SDK's default ingest route. */
export function multipartProbes(
  path: string,
  headers: Record<string, string>,
  runId: string,
  gzipBomb: Buffer,
): RawRequest[] {
  const run = sampleRun(runId);
  const { inputs, outputs, ...main } = run;
  const good: Part[] = [
    { name: `post.${runId}`, body: JSON.stringify(main) },
    { name: `post.${runId}.inputs`, body: JSON.stringify(inputs) },
    { name: `post.${runId}.outputs`, body: JSON.stringify(outputs) },
    { name: `attachment.${runId}.notes`, body: "plain bytes", type: "text/plain" },
  ];
  const type = `multipart/form-data; boundary=${BOUNDARY}`;
  const probe = (
    label: string,
    body: Buffer | string,
    contentType = type,
    extra: Record<string, string> = {},
  ): RawRequest => ({
    label: `POST ${path} (multipart): ${label}`,
    method: "POST",
    target: path,
    headers: { ...headers, "Content-Type": contentType, ...extra },
    body,
  });
  const withPart = (label: string, part: Part) => probe(label, multipartBody([good[0]!, part]));
  const mainWith = (label: string, patch: JsonObject) =>
    probe(label, multipartBody([{ name: `post.${runId}`, body: JSON.stringify({ ...main, ...patch }) }]));
  return [
    probe("plausible parts", multipartBody(good)),
    probe("not multipart", multipartBody(good), "application/json"),
    probe("no boundary", multipartBody(good), "multipart/form-data"),
    probe("boundary too long", multipartBody(good), `multipart/form-data; boundary=${"b".repeat(71)}`),
    probe("no closing boundary", multipartBody(good, { close: false })),
    probe("empty body", ""),
    probe("closing boundary only", `--${BOUNDARY}--\r\n`),
    probe("no CRLF after the boundary", `--${BOUNDARY}garbage`),
    probe("header line without a colon", `--${BOUNDARY}\r\nno colon here\r\n\r\nx\r\n--${BOUNDARY}--\r\n`),
    probe("part headers over 16 KiB", `--${BOUNDARY}\r\nX-Big: ${"a".repeat(20_000)}\r\n`),
    probe(
      "part without a name",
      `--${BOUNDARY}\r\nContent-Type: application/json\r\n\r\n{}\r\n--${BOUNDARY}--\r\n`,
    ),
    withPart("NUL in a part name", { name: `post.${runId}.in\u0000puts`, body: "{}" }),
    withPart("latin-1 part name", { name: `post.${runId}.\u00e9\u00ff`, body: "{}" }),
    withPart("part with its own Content-Encoding", {
      name: `post.${runId}.inputs`,
      body: "{}",
      headers: ["Content-Encoding: gzip"],
    }),
    withPart("part without a Content-Type", { name: `post.${runId}.inputs`, body: "{}", type: null }),
    withPart("part without a length", { name: `post.${runId}.inputs`, body: "{}", length: null }),
    withPart("part length not a number", { name: `post.${runId}.inputs`, body: "{}", length: "ten" }),
    withPart("part longer than it holds", { name: `post.${runId}.inputs`, body: "{}", length: 99_999 }),
    withPart("unknown run field", { name: `post.${runId}.bogus`, body: "{}" }),
    withPart("unknown event", { name: `bogus.${runId}`, body: "{}" }),
    withPart("run id not a UUID", { name: "post.not-a-uuid", body: "{}" }),
    withPart("invalid JSON part", { name: `post.${runId}.inputs`, body: "{,}" }),
    withPart("deep JSON part", { name: `post.${runId}.inputs`, body: nestedObjects(10_000) }),
    withPart("NUL in a JSON part", { name: `post.${runId}.inputs`, body: '{"q":"a\\u0000b"}' }),
    withPart("NUL in a JSON member name", { name: `post.${runId}.inputs`, body: '{"q\\u0000":"a"}' }),
    withPart("lone surrogate in a JSON part", { name: `post.${runId}.outputs`, body: '{"q":"\\ud800"}' }),
    withPart("lone surrogate member name", { name: `post.${runId}.outputs`, body: '{"\\udc00":1}' }),
    withPart("JSON array as a run", { name: `post.${runId}`, body: "[]" }),
    withPart("feedback with NUL", {
      name: `feedback.${runId}`,
      body: JSON.stringify({ run_id: runId, key: "k\u0000" }),
    }),
    withPart("attachment name with NUL", {
      name: `attachment.${runId}.fi\u0000le`,
      body: "x",
      type: "text/plain",
    }),
    withPart("attachment type with NUL", {
      name: `attachment.${runId}.file`,
      body: "x",
      type: "text/pl\u0000ain",
    }),
    mainWith("NUL in the run name", { name: "a\u0000b" }),
    mainWith("lone surrogate in the run name", { name: "\ud800" }),
    mainWith("NUL in a tag", { tags: ["\u0000"] }),
    mainWith("NUL in the project name", { session_name: "p\u0000" }),
    mainWith("NUL in the run type", { run_type: "ch\u0000ain" }),
    mainWith("NUL in a metadata key", { extra: { metadata: { "k\u0000": 1 } } }),
    mainWith("huge token count", { total_tokens: 1e308, prompt_tokens: -1 }),
    mainWith("far-future start", {
      start_time: "9999-12-31T23:59:59.999999Z",
      dotted_order: `99991231T235959999999Z${runId}`,
    }),
    mainWith("year 10000 start", { start_time: "10000-01-01T00:00:00Z" }),
    mainWith("far-past start", {
      start_time: "0001-01-01T00:00:00Z",
      dotted_order: `00010101T000000000000Z${runId}`,
    }),
    mainWith("end before 1970", { end_time: -1 }),
    mainWith("end in epoch ms beyond JavaScript", { end_time: 8.64e15 + 1 }),
    mainWith("NUL in the dotted order", { dotted_order: `20240506T070809000000Z${runId}\u0000` }),
    probe("gzip header, plain body", multipartBody(good), type, { "Content-Encoding": "gzip" }),
    probe("truncated gzip", gzipSync(multipartBody(good)).subarray(0, 20), type, {
      "Content-Encoding": "gzip",
    }),
    probe("gzip bomb", gzipBomb, type, { "Content-Encoding": "gzip" }),
    probe("unsupported encoding", multipartBody(good), type, { "Content-Encoding": "br" }),
  ];
}

/** Requests that break HTTP itself or the server's request-target handling, on no route in particular. */
export function serverWideProbes(headers: Record<string, string>): RawRequest[] {
  const raw = (label: string, requestLine: string, extra: Partial<RawRequest> = {}): RawRequest => ({
    label,
    method: "",
    target: "",
    requestLine,
    headers,
    ...extra,
  });
  return [
    raw("absolute-form target with an invalid URL", "GET http://[bad/ok HTTP/1.1"),
    raw("absolute-form target with an invalid port", "GET http://127.0.0.1:99999/ok HTTP/1.1"),
    raw("absolute-form target", "GET http://127.0.0.1/ok HTTP/1.1"),
    raw("asterisk-form target", "GET * HTTP/1.1"),
    raw("OPTIONS *", "OPTIONS * HTTP/1.1"),
    raw("target without a slash", "GET ok HTTP/1.1"),
    raw("authority-form target", "CONNECT 127.0.0.1:1 HTTP/1.1"),
    raw("bad escape at the root", "GET /%ZZ HTTP/1.1"),
    raw("bad escape in a Connect path", "POST /agentplane.system.v1.SystemService/Ok%ZZ HTTP/1.1", {
      body: "{}",
      headers: { ...headers, "Content-Type": "application/json" },
    }),
    raw("bad query escape on a Connect path", "POST /agentplane.system.v1.SystemService/Ok?%ZZ HTTP/1.1", {
      body: "{}",
      headers: { ...headers, "Content-Type": "application/json" },
    }),
    raw("HTTP/1.0 without Host to a Connect path", "POST /agentplane.system.v1.SystemService/Ok HTTP/1.0", {
      body: "{}",
      headers: { ...headers, "Content-Type": "application/json" },
    }),
    raw("HTTP/1.0 without Host to a REST path", "GET /ok HTTP/1.0"),
    raw("invalid Host on a Connect path", "POST /agentplane.system.v1.SystemService/Ok HTTP/1.1", {
      body: "{}",
      headers: { ...headers, Host: "[bad", "Content-Type": "application/json" },
    }),
    raw("invalid Host on a REST path", "GET /api/v1/whoami HTTP/1.1", {
      headers: { ...headers, Host: "[bad" },
    }),
    raw("Content-Length far over the limit", "POST /threads HTTP/1.1", {
      body: "{}",
      contentLength: 999_999_999_999,
      headers: { ...headers, "Content-Type": "application/json" },
    }),
    raw(
      "Content-Length over the limit on a Connect path",
      "POST /agentplane.iam.v1.IdentityService/Whoami HTTP/1.1",
      {
        body: "{}",
        contentLength: 40 * 1024 * 1024,
        headers: { ...headers, "Content-Type": "application/json" },
      },
    ),
    raw("Content-Length over the limit on multipart", "POST /api/v1/runs/multipart HTTP/1.1", {
      body: "x",
      contentLength: 40 * 1024 * 1024,
      headers: { ...headers, "Content-Type": `multipart/form-data; boundary=${BOUNDARY}` },
    }),
    raw("x-tenant-id not a UUID", "POST /threads/search HTTP/1.1", {
      body: "{}",
      headers: { ...headers, "Content-Type": "application/json", "x-tenant-id": "%00" },
    }),
    raw("x-tenant-id far too long", "GET /api/v1/whoami HTTP/1.1", {
      headers: { ...headers, "x-tenant-id": "f".repeat(8000) },
    }),
    raw("x-api-key with latin-1 bytes", "GET /api/v1/whoami HTTP/1.1", {
      headers: { "x-api-key": "\u00ff\u00fe" },
    }),
  ];
}
