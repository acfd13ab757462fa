/**
 * The OTLP side of bench:ingest: the bench's runs as the spans an OpenTelemetry SDK exports for
 * them (the same traces, names, inputs, outputs, metadata, tags and token usage, in the attributes
 * LangSmith's own OTel exporter writes), 100 spans per export request as its batch processor's
 * default batch is 512 and LangSmith's multipart batch 100, gzip as with `compression: "gzip"`; and
 * their senders over OTLP/HTTP protobuf and OTLP/gRPC (HTTP/2, one connection with `concurrency`
 * streams, as a gRPC channel multiplexes).
 */
import { randomBytes } from "node:crypto";
import { connect } from "node:http2";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { ExportTraceServiceRequestSchema } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { KeyValue } from "../../gen/opentelemetry/proto/common/v1/common_pb.js";
import type { Span } from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import { createJsonClient } from "../agent-crud/json-client.js";

/** One gzip ExportTraceServiceRequest in its protobuf encoding. */
export type OtlpBody = Buffer;

function text(key: string, value: string): KeyValue {
  return { key, value: { value: { case: "stringValue", value } } } as KeyValue;
}

function int(key: string, value: number): KeyValue {
  return { key, value: { value: { case: "intValue", value: BigInt(value) } } } as KeyValue;
}

/** Nanoseconds of an ISO time with microseconds (`…ss.ffffffZ`) or epoch milliseconds. */
function nanos(time: unknown): bigint {
  if (typeof time === "number") return BigInt(time) * 1_000_000n;
  const iso = String(time);
  return BigInt(Date.parse(`${iso.slice(0, 23)}Z`)) * 1_000_000n + BigInt(iso.slice(23, 26)) * 1000n;
}

/**
 * The bench's runs (as bench:ingest builds them: roots first, `runsPerTrace` per trace) as OTLP
 * export bodies of `batch` spans each.
 */
export function otlpBodies(runs: readonly Record<string, unknown>[], batch: number): OtlpBody[] {
  const traceIds = new Map<string, Uint8Array>();
  const spanIds = new Map<string, Uint8Array>();
  const spans = runs.map((run) => {
    const id = String(run.id);
    const traceKey = String(run.trace_id);
    if (!traceIds.has(traceKey)) traceIds.set(traceKey, randomBytes(16));
    const spanId = randomBytes(8);
    spanIds.set(id, spanId);
    const extra = run.extra as { metadata: Record<string, string> };
    const outputs = run.outputs as { usage_metadata?: { input_tokens: number; output_tokens: number } };
    const attributes = [
      text("langsmith.span.kind", String(run.run_type)),
      text("langsmith.span.tags", (run.tags as string[]).join(",")),
      text("gen_ai.prompt", JSON.stringify(run.inputs)),
      text("gen_ai.completion", JSON.stringify(run.outputs)),
      ...Object.entries(extra.metadata).map(([key, value]) => text(`langsmith.metadata.${key}`, value)),
    ];
    if (outputs.usage_metadata) {
      attributes.push(int("gen_ai.usage.input_tokens", outputs.usage_metadata.input_tokens));
      attributes.push(int("gen_ai.usage.output_tokens", outputs.usage_metadata.output_tokens));
    }
    const parent = run.parent_run_id === undefined ? undefined : spanIds.get(String(run.parent_run_id));
    return {
      traceId: traceIds.get(traceKey),
      spanId,
      parentSpanId: parent ?? new Uint8Array(0),
      name: String(run.name),
      kind: 1,
      startTimeUnixNano: nanos(run.start_time),
      endTimeUnixNano: nanos(run.end_time),
      attributes,
      status: { code: 1 },
    } as unknown as Span;
  });
  const resource = { attributes: [text("service.name", "bench"), text("telemetry.sdk.language", "nodejs")] };
  const bodies: OtlpBody[] = [];
  for (let i = 0; i < spans.length; i += batch) {
    const request = create(ExportTraceServiceRequestSchema, {
      resourceSpans: [
        {
          resource,
          scopeSpans: [{ scope: { name: "bench", version: "1" }, spans: spans.slice(i, i + batch) }],
        },
      ],
    });
    bodies.push(gzipSync(toBinary(ExportTraceServiceRequestSchema, request)));
  }
  return bodies;
}

/** The headers every export carries: the key and the project. */
function exportHeaders(apiKey: string, project: string) {
  return { "x-api-key": apiKey, "langsmith-project": project };
}

/** Runs `send` over `bodies`, `concurrency` at a time. */
async function inParallel(
  bodies: readonly OtlpBody[],
  concurrency: number,
  send: (body: OtlpBody) => Promise<void>,
) {
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) await send(bodies[next++] as OtlpBody);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Sends every body to `POST /v1/traces` (OTLP/HTTP protobuf), `concurrency` at a time. */
export async function sendOtlpHttp(
  port: number,
  apiKey: string,
  project: string,
  bodies: readonly OtlpBody[],
  concurrency: number,
): Promise<void> {
  const client = createJsonClient(port, exportHeaders(apiKey, project), concurrency);
  try {
    await inParallel(bodies, concurrency, async (body) => {
      const answer = await client.sendBytes("POST", "/v1/traces", body, {
        "content-type": "application/x-protobuf",
        "content-encoding": "gzip",
      });
      if (answer.status !== 200) throw new Error(`OTLP/HTTP answered ${answer.status}: ${answer.text}`);
    });
  } finally {
    client.close();
  }
}

/** The gRPC envelope of a compressed message: flag 1, then its length (big-endian). */
function envelope(message: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = 1;
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** Sends every body as `TraceService/Export` over gRPC (h2c, gzip messages), `concurrency` streams at a time. */
export async function sendOtlpGrpc(
  port: number,
  apiKey: string,
  project: string,
  bodies: readonly OtlpBody[],
  concurrency: number,
): Promise<void> {
  const session = connect(`http://127.0.0.1:${port}`);
  session.on("error", () => undefined);
  try {
    await inParallel(
      bodies,
      concurrency,
      (body) =>
        new Promise<void>((resolve, reject) => {
          const stream = session.request({
            ":method": "POST",
            ":path": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            "content-type": "application/grpc",
            te: "trailers",
            "grpc-encoding": "gzip",
            ...exportHeaders(apiKey, project),
          });
          let status: string | undefined;
          stream.on("trailers", (trailers) => {
            status = String(trailers["grpc-status"]);
          });
          stream.on("response", (headers) => {
            if (headers["grpc-status"] !== undefined) status = String(headers["grpc-status"]);
          });
          stream.on("data", () => undefined);
          stream.on("error", reject);
          stream.on("end", () =>
            status === "0" ? resolve() : reject(new Error(`OTLP/gRPC answered grpc-status ${status}`)),
          );
          stream.end(envelope(body));
        }),
    );
  } finally {
    session.close();
  }
}
