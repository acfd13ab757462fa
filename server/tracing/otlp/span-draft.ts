/**
 * One OTLP span as the run it becomes, before its place in its trace is known: its id, its
 * parent's id and the run's fields. Ids are LangSmith's: a span's run id is its 8-byte span id in
 * the last 16 hex digits of a UUID (`00000000-0000-0000-xxxx-xxxxxxxxxxxx`), so the same span sent
 * twice is the same run, and a child names its parent's run before the parent arrives.
 */
import type { InstrumentationScope } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";
import type { Resource } from "../../../gen/opentelemetry/proto/resource/v1/resource_pb.js";
import {
  type Span,
  Span_SpanKind,
  Status_StatusCode,
} from "../../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import type { RunInput } from "../run-normalizer.js";
import { AttributeReader, type JsonRecord } from "./attribute-reader.js";
import { type AttributeValue, attributeMap, attributeObject } from "./otel-attributes.js";
import { type EventInput, readConventions } from "./span-conventions.js";

/** A span as a run whose position (trace, parent, dotted_order) is still to be settled. */
export interface SpanDraft {
  /** The OTel trace id, 32 hex digits: what the span's trace is known by before its root arrives. */
  readonly otelTraceId: string;
  readonly runId: string;
  /** The parent span's run id; null for a root span. */
  readonly parentRunId: string | null;
  /** The run without dotted_order, trace_id and parent_run_id, which its position gives. */
  readonly run: RunInput & { id: string; start_time: string };
}

/** Where a span came from: its resource and instrumentation scope. */
export interface SpanOrigin {
  readonly resource: Resource | undefined;
  readonly scope: InstrumentationScope | undefined;
}

/** Bytes of an OTel trace id and span id. */
const TRACE_ID_BYTES = 16;
const SPAN_ID_BYTES = 8;
/** Latest instant a run may have (the end of year 9999), in microseconds: four-digit years. */
const MAX_MICROS = 253_402_300_799_999_999n;
/** Nanoseconds in a microsecond: span times are kept to the microsecond, as runs store them. */
const NANOS_PER_MICRO = 1000n;

/** The run id of an 8-byte span id, as LangSmith derives it. */
export function runIdOfSpan(spanId: Uint8Array): string {
  const hex = Buffer.from(spanId).toString("hex");
  return `00000000-0000-0000-${hex.slice(0, 4)}-${hex.slice(4)}`;
}

/** The draft of one span, or why it is refused (a partial success of the export). */
export function draftOfSpan(span: Span, origin: SpanOrigin): SpanDraft | { rejected: string } {
  if (!isValidId(span.traceId, TRACE_ID_BYTES))
    return { rejected: "trace_id must be 16 bytes, not all zero" };
  if (!isValidId(span.spanId, SPAN_ID_BYTES)) return { rejected: "span_id must be 8 bytes, not all zero" };
  const hasParent = span.parentSpanId.length > 0;
  if (hasParent && !isValidId(span.parentSpanId, SPAN_ID_BYTES))
    return { rejected: "parent_span_id must be empty or 8 bytes, not all zero" };
  const start = isoOfNanos(span.startTimeUnixNano);
  if (start === undefined || span.startTimeUnixNano === 0n)
    return { rejected: "start_time_unix_nano must be a time from 1970 to 9999" };
  const end = span.endTimeUnixNano === 0n ? null : isoOfNanos(span.endTimeUnixNano);
  if (end === undefined) return { rejected: "end_time_unix_nano must be a time from 1970 to 9999" };

  const runId = runIdOfSpan(span.spanId);
  const attrs = new AttributeReader(attributeMap(span.attributes));
  const events: EventInput[] = span.events.map((event) => ({
    name: event.name,
    attributes: attributeMap(event.attributes),
  }));
  const resource = attributeObject(origin.resource?.attributes ?? []);
  const found = readConventions(attrs, events);
  const runEvents = span.events.flatMap((event, i) =>
    found.consumed.has(events[i] as EventInput)
      ? []
      : [
          {
            name: event.name,
            time: isoOfNanos(event.timeUnixNano) ?? start,
            kwargs: attributeObject(event.attributes),
          },
        ],
  );
  const sessionName = found.sessionName ?? stringOf(resource["openinference.project.name"]);
  return {
    otelTraceId: Buffer.from(span.traceId).toString("hex"),
    runId,
    parentRunId: hasParent ? runIdOfSpan(span.parentSpanId) : null,
    run: {
      id: runId,
      name: found.name || span.name || "unnamed span",
      run_type: found.runType,
      start_time: start,
      end_time: end,
      inputs: found.inputs,
      outputs: found.outputs,
      error: errorOf(span, events),
      events: runEvents.length > 0 ? runEvents : null,
      tags: found.tags,
      extra: { metadata: found.metadata, otel: otelExtra(span, origin, resource, attrs.rest()) },
      ...(found.referenceExampleId ? { reference_example_id: found.referenceExampleId } : {}),
      ...(found.sessionId ? { session_id: found.sessionId } : {}),
      ...(sessionName ? { session_name: sessionName } : {}),
    },
  };
}

function isValidId(id: Uint8Array, bytes: number): boolean {
  return id.length === bytes && id.some((byte) => byte !== 0);
}

/** Nanoseconds since the epoch as ISO 8601 with microseconds (the rest cut), or undefined out of range. */
export function isoOfNanos(nanos: bigint): string | undefined {
  const micros = nanos / NANOS_PER_MICRO;
  if (micros > MAX_MICROS) return undefined;
  const ms = Number(micros / 1000n);
  return `${new Date(ms).toISOString().slice(0, 23)}${String(micros % 1000n).padStart(3, "0")}Z`;
}

function stringOf(value: AttributeValue | undefined): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * The run's error: the span's status message when its status is ERROR, else its exception events'
 * `exception.type: exception.message` and stack trace; a span whose status is OK has none, nor
 * one with neither.
 */
function errorOf(span: Span, events: readonly EventInput[]): string | null {
  const code = span.status?.code ?? Status_StatusCode.UNSET;
  if (code === Status_StatusCode.OK) return null;
  const exceptions = events
    .filter((event) => event.name === "exception")
    .map((event) => {
      const type = stringOf(event.attributes.get("exception.type"));
      const message = stringOf(event.attributes.get("exception.message"));
      const stack = stringOf(event.attributes.get("exception.stacktrace"));
      const head = [type, message].filter(Boolean).join(": ");
      return stack ? `${head}\n\n${stack}` : head;
    })
    .filter(Boolean);
  if (code !== Status_StatusCode.ERROR && exceptions.length === 0) return null;
  const message = span.status?.message ?? "";
  const recorded = exceptions.join("\n\n");
  // The status message first unless an exception already says it (it usually is its message).
  if (message && !recorded.includes(message)) return recorded ? `${message}\n\n${recorded}` : message;
  return recorded || message || "error";
}

/** What the span says beyond the run's fields, kept under `extra.otel`. */
function otelExtra(span: Span, origin: SpanOrigin, resource: JsonRecord, attributes: JsonRecord): JsonRecord {
  const otel: JsonRecord = {
    trace_id: Buffer.from(span.traceId).toString("hex"),
    span_id: Buffer.from(span.spanId).toString("hex"),
    kind: Span_SpanKind[span.kind] ?? String(span.kind),
    attributes,
    resource,
  };
  if (span.parentSpanId.length > 0) otel.parent_span_id = Buffer.from(span.parentSpanId).toString("hex");
  if (span.traceState) otel.trace_state = span.traceState;
  if (origin.scope && (origin.scope.name || origin.scope.version)) {
    otel.scope = { name: origin.scope.name, version: origin.scope.version };
    if (origin.scope.attributes.length > 0)
      (otel.scope as JsonRecord).attributes = attributeObject(origin.scope.attributes);
  }
  if (span.status && (span.status.code !== Status_StatusCode.UNSET || span.status.message))
    otel.status = {
      code: Status_StatusCode[span.status.code] ?? String(span.status.code),
      message: span.status.message,
    };
  if (span.links.length > 0) {
    otel.links = span.links.map((link) => ({
      trace_id: Buffer.from(link.traceId).toString("hex"),
      span_id: Buffer.from(link.spanId).toString("hex"),
      attributes: attributeObject(link.attributes),
    }));
  }
  for (const [key, count] of [
    ["dropped_attributes_count", span.droppedAttributesCount],
    ["dropped_events_count", span.droppedEventsCount],
    ["dropped_links_count", span.droppedLinksCount],
  ] as const) {
    if (count > 0) otel[key] = count;
  }
  return otel;
}
