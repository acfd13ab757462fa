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
import { type SpanReading, type SpanScreen, screenedText, UnstorableSpanValue } from "./span-screen.js";

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

/**
 * Where a span came from, mapped once per resource and scope for all their spans: the resource's
 * attributes and the scope, as `extra.otel` keeps them, or why none of their spans can be stored.
 */
export type SpanOrigin =
  | {
      readonly resource: JsonRecord;
      readonly scope: JsonRecord | undefined;
      /** The resource's `openinference.project.name`, the project of spans that name none. */
      readonly projectName: string | undefined;
    }
  | { readonly rejected: string };

/** The origin of the spans of `resource` and `scope` (see {@link SpanOrigin}). */
export function spanOrigin(
  resource: Resource | undefined,
  scope: InstrumentationScope | undefined,
  { screen }: SpanReading,
): SpanOrigin {
  try {
    const attributes = attributeObject(resource?.attributes ?? [], screen, "resource attribute");
    let scopeRecord: JsonRecord | undefined;
    if (scope && (scope.name || scope.version)) {
      scopeRecord = {
        name: screenedText(screen, scope.name, "the instrumentation scope's name"),
        version: screenedText(screen, scope.version, "the instrumentation scope's version"),
      };
      if (scope.attributes.length > 0)
        scopeRecord.attributes = attributeObject(scope.attributes, screen, "instrumentation scope attribute");
    }
    return {
      resource: attributes,
      scope: scopeRecord,
      projectName: stringOf(attributes["openinference.project.name"]),
    };
  } catch (error) {
    if (error instanceof UnstorableSpanValue) return { rejected: error.message };
    throw error;
  }
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
  return runIdOfHex(hexOf(spanId));
}

function runIdOfHex(hex: string): string {
  return `00000000-0000-0000-${hex.slice(0, 4)}-${hex.slice(4)}`;
}

/** Bytes as hex, without copying them first. */
function hexOf(bytes: Uint8Array): string {
  return (
    Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  ).toString("hex");
}

/**
 * The draft of one span, or why it is refused (a partial success of the export): ids or times out
 * of range, or a value that cannot be stored (span-screen.ts).
 */
export function draftOfSpan(
  span: Span,
  origin: SpanOrigin,
  reading: SpanReading,
): SpanDraft | { rejected: string } {
  if ("rejected" in origin) return origin;
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
  try {
    return mapSpan(span, origin, reading, start, end);
  } catch (error) {
    if (error instanceof UnstorableSpanValue) return { rejected: error.message };
    throw error;
  }
}

/** The draft of a span whose ids and times are valid; throws {@link UnstorableSpanValue}. */
function mapSpan(
  span: Span,
  origin: Exclude<SpanOrigin, { rejected: string }>,
  reading: SpanReading,
  start: string,
  end: string | null,
): SpanDraft {
  const { screen } = reading;
  const spanHex = hexOf(span.spanId);
  const traceHex = hexOf(span.traceId);
  const parentHex = span.parentSpanId.length > 0 ? hexOf(span.parentSpanId) : undefined;
  const runId = runIdOfHex(spanHex);
  const attrs = new AttributeReader(attributeMap(span.attributes, screen, "attribute"), reading);
  const events: EventInput[] = span.events.map((event) => ({
    name: screenedText(screen, event.name, "an event's name"),
    attributes: attributeMap(event.attributes, screen, `event ${JSON.stringify(event.name)} attribute`),
  }));
  const found = readConventions(attrs, events);
  const runEvents: JsonRecord[] = [];
  for (const [i, event] of span.events.entries()) {
    const input = events[i] as EventInput;
    if (found.consumed.has(input)) continue;
    runEvents.push({
      name: input.name,
      time: isoOfNanos(event.timeUnixNano) ?? start,
      kwargs: Object.fromEntries(input.attributes),
    });
  }
  const sessionName = found.sessionName ?? origin.projectName;
  const name = found.name || screenedText(screen, span.name, "the span's name") || "unnamed span";
  const otel = otelExtra(span, origin, attrs.rest(), { spanHex, traceHex, parentHex }, screen);
  return {
    otelTraceId: traceHex,
    runId,
    parentRunId: parentHex === undefined ? null : runIdOfHex(parentHex),
    run: {
      id: runId,
      name,
      run_type: found.runType,
      start_time: start,
      end_time: end,
      inputs: found.inputs,
      outputs: found.outputs,
      error: errorOf(span, events),
      events: runEvents.length > 0 ? runEvents : null,
      tags: found.tags,
      extra: { metadata: found.metadata, otel },
      ...(found.referenceExampleId ? { reference_example_id: found.referenceExampleId } : {}),
      ...(found.sessionId ? { session_id: found.sessionId } : {}),
      // A span that names no project goes to the request's.
      session_name: sessionName || (found.sessionId ? null : reading.defaultProject),
    },
  };
}

function isValidId(id: Uint8Array, bytes: number): boolean {
  return id.length === bytes && id.some((byte) => byte !== 0);
}

/** Microseconds in a second. */
const MICROS_PER_SECOND = 1_000_000n;
/**
 * The last second {@link isoOfNanos} formatted, and its `YYYY-MM-DDTHH:MM:SS.`: the spans of an
 * export start and end within a few seconds, so formatting a Date once per second rather than per
 * time takes most of the cost of a span's times away.
 */
const lastSecond = { second: -1n, prefix: "" };

/** Nanoseconds since the epoch as ISO 8601 with microseconds (the rest cut), or undefined out of range. */
export function isoOfNanos(nanos: bigint): string | undefined {
  const micros = nanos / NANOS_PER_MICRO;
  if (micros > MAX_MICROS) return undefined;
  const second = micros / MICROS_PER_SECOND;
  if (second !== lastSecond.second) {
    lastSecond.prefix = new Date(Number(second) * 1000).toISOString().slice(0, 20);
    lastSecond.second = second;
  }
  return `${lastSecond.prefix}${String(micros % MICROS_PER_SECOND).padStart(6, "0")}Z`;
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

/** The span's ids as hex, computed once. */
interface SpanHex {
  spanHex: string;
  traceHex: string;
  parentHex: string | undefined;
}

/** What the span says beyond the run's fields, kept under `extra.otel`. */
function otelExtra(
  span: Span,
  origin: Exclude<SpanOrigin, { rejected: string }>,
  attributes: JsonRecord,
  { spanHex, traceHex, parentHex }: SpanHex,
  screen: SpanScreen,
): JsonRecord {
  const otel: JsonRecord = {
    trace_id: traceHex,
    span_id: spanHex,
    kind: Span_SpanKind[span.kind] ?? String(span.kind),
    attributes,
    resource: origin.resource,
  };
  if (parentHex !== undefined) otel.parent_span_id = parentHex;
  if (span.traceState) otel.trace_state = screenedText(screen, span.traceState, "the span's trace_state");
  if (origin.scope) otel.scope = origin.scope;
  if (span.status && (span.status.code !== Status_StatusCode.UNSET || span.status.message))
    otel.status = {
      code: Status_StatusCode[span.status.code] ?? String(span.status.code),
      // Screened here, before errorOf reads it: every span with a status message passes this way.
      message: screenedText(screen, span.status.message, "the span's status message"),
    };
  if (span.links.length > 0) {
    otel.links = span.links.map((link) => ({
      trace_id: hexOf(link.traceId),
      span_id: hexOf(link.spanId),
      ...(link.traceState
        ? { trace_state: screenedText(screen, link.traceState, "a link's trace_state") }
        : {}),
      attributes: attributeObject(link.attributes, screen, "link attribute"),
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
