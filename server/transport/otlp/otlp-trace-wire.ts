/**
 * Fast path: the OTLP `ExportTraceServiceRequest` decoded from its protobuf encoding by hand, for
 * OTLP/HTTP protobuf and OTLP/gRPC (the encodings every OpenTelemetry exporter sends). protobuf-es's
 * `fromBinary` finds each field through the schema's reflection API and sets it through another:
 * for bench:ingest's export of 100 spans it was the largest cost of the server's whole OTLP path,
 * more than drafting and validating the runs together. This module reads the handful of message
 * types of the OTLP trace wire shape (trace.proto, common.proto, resource.proto, pinned in proto/)
 * with one function per type and no lookups.
 *
 * Invariants (otlp-trace-wire.test.ts checks each one; a change to the vendored protos must keep them):
 *
 * 1. What it returns equals `fromBinary(ExportTraceServiceRequestSchema, bytes, {readUnknownFields:
 *    false})`: the same message types (`$typeName`), every field of the schema with protobuf-es's
 *    defaults, optional message fields absent unless sent, repeated singular fields last-wins,
 *    repeated singular message fields merged, bytes as views of the input.
 * 2. It refuses (with {@link OtlpWireError}) every input `fromBinary` refuses: a truncated field, a
 *    varint over 10 bytes, a string that is not UTF-8, an end-group tag that closes nothing.
 * 3. It refuses, beyond those, what the binary input screen (transport/input/binary-screen.ts)
 *    refuses on the other protocols: a known field in a wire type that is not its own, a nested
 *    message whose length runs past its parent's end, and attribute values (arrays and key-value
 *    lists) nested more than MAX_JSON_DEPTH levels deep. Nothing else.
 * 4. Unknown fields are skipped, groups included, as protobuf-es skips them.
 *
 * Strings are decoded with Node's UTF-8 decoder, which replaces every ill-formed sequence with
 * U+FFFD; only a string whose text holds U+FFFD is checked byte by byte, so that valid text (which
 * may hold U+FFFD itself) is told from ill-formed bytes as protobuf-es's strict decoder tells them.
 */
import { isUtf8 } from "node:buffer";
import type { ExportTraceServiceRequest } from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type {
  AnyValue,
  ArrayValue,
  EntityRef,
  InstrumentationScope,
  KeyValue,
  KeyValueList,
} from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";
import type { Resource } from "../../../gen/opentelemetry/proto/resource/v1/resource_pb.js";
import type {
  ResourceSpans,
  ScopeSpans,
  Span,
  Span_Event,
  Span_Link,
  Status,
} from "../../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import { MAX_JSON_DEPTH } from "../input/input-limits.js";

/** Why the bytes are not an ExportTraceServiceRequest; the message says what is wrong and where. */
export class OtlpWireError extends Error {
  override readonly name = "OtlpWireError";
}

/** Wire types (protobuf encoding). */
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;
/** Bits of a tag that hold its wire type. */
const WIRE_TYPE_BITS = 3;
/** The longest varint (a 64-bit value in groups of 7 bits). */
const MAX_VARINT_BYTES = 10;
/**
 * How deep unknown groups may nest while skipped: protobuf-es skips them within what is left of
 * its recursion limit; a group nested this deep is no field of any OTLP version.
 */
const MAX_GROUP_DEPTH = 64;
/** Shared by every bytes field not sent: a view of nothing, which no reader can change. */
const NO_BYTES = new Uint8Array(0);

/** The request in `bytes`, as `fromBinary` decodes it (see the module comment); throws {@link OtlpWireError}. */
export function decodeExportTraceRequest(bytes: Uint8Array): ExportTraceServiceRequest {
  const r = new WireReader(bytes);
  const request: ExportTraceServiceRequest = {
    $typeName: "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest",
    resourceSpans: [],
  };
  const end = bytes.length;
  readFields(r, end, "ExportTraceServiceRequest", REQUEST_FIELDS, (tag) => {
    if (tag !== LD(1)) return false;
    request.resourceSpans.push(readResourceSpans(r, r.messageEnd(end)));
    return true;
  });
  return request;
}

/** The decoding state: the input, where the next byte is, and views to read numbers with. */
class WireReader {
  pos = 0;
  private readonly text: Buffer;
  private readonly view: DataView;

  constructor(readonly bytes: Uint8Array) {
    this.text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** A tag (field number and wire type); field number 0 is refused, as protobuf-es refuses it. */
  tag(): number {
    const tag = this.uint32();
    if (tag >>> WIRE_TYPE_BITS === 0)
      throw new OtlpWireError(`illegal tag: field number 0 at byte ${this.pos}`);
    return tag;
  }

  /** A varint's low 32 bits, unsigned (uint32, and int32 with `| 0`). */
  uint32(): number {
    const { bytes } = this;
    let at = this.pos;
    if (at >= bytes.length) throw new OtlpWireError("premature end of data inside a varint");
    let byte = bytes[at++] as number;
    if (byte < 0x80) {
      this.pos = at;
      return byte;
    }
    let value = byte & 0x7f;
    for (let shift = 7; ; shift += 7) {
      if (at >= bytes.length) throw new OtlpWireError("premature end of data inside a varint");
      byte = bytes[at++] as number;
      // Bits past 32 are dropped, as protobuf-es's uint32 and int32 drop them.
      if (shift < 32) value |= (byte & 0x7f) << shift;
      if (byte < 0x80) break;
      if (at - this.pos >= MAX_VARINT_BYTES) throw new OtlpWireError("invalid varint: more than 10 bytes");
    }
    this.pos = at;
    return value >>> 0;
  }

  /** A varint as a signed 64-bit integer (int64). */
  int64(): bigint {
    const { bytes } = this;
    let at = this.pos;
    let low = 0;
    let high = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= bytes.length) throw new OtlpWireError("premature end of data inside a varint");
      const byte = bytes[at++] as number;
      const bits = byte & 0x7f;
      if (shift < 28) low |= bits << shift;
      else if (shift === 28) {
        low |= (bits & 0x0f) << 28;
        high |= bits >> 4;
      } else high |= bits << (shift - 32);
      if (byte < 0x80) break;
      if (at - this.pos >= MAX_VARINT_BYTES) throw new OtlpWireError("invalid varint: more than 10 bytes");
    }
    this.pos = at;
    if (high === 0 && low >= 0) return BigInt(low);
    return BigInt.asIntN(64, (BigInt(high >>> 0) << 32n) | BigInt(low >>> 0));
  }

  private skipVarint(): void {
    const start = this.pos;
    for (;;) {
      if (this.pos >= this.bytes.length) throw new OtlpWireError("premature end of data inside a varint");
      if ((this.bytes[this.pos++] as number) < 0x80) return;
      if (this.pos - start >= MAX_VARINT_BYTES) throw new OtlpWireError("invalid varint: more than 10 bytes");
    }
  }

  /** A varint as a bool: anything but zero is true. */
  bool(): boolean {
    return this.int64() !== 0n;
  }

  fixed32(): number {
    this.need(4);
    const value = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return value;
  }

  fixed64(): bigint {
    this.need(8);
    const value = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    return value;
  }

  double(): number {
    this.need(8);
    const value = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return value;
  }

  /** A length-delimited field's bytes, as a view of the input. */
  bytesField(): Uint8Array {
    const end = this.lengthEnd();
    const view = this.bytes.subarray(this.pos, end);
    this.pos = end;
    return view;
  }

  /** A string field: valid UTF-8 or refused. */
  string(): string {
    const end = this.lengthEnd();
    const start = this.pos;
    this.pos = end;
    if (start === end) return "";
    const text = this.text.toString("utf8", start, end);
    if (text.includes("\uFFFD") && !isUtf8(this.bytes.subarray(start, end)))
      throw new OtlpWireError(`invalid UTF-8 in a string at byte ${start}`);
    return text;
  }

  /** Where a nested message that starts here ends; refused when past `parentEnd`. */
  messageEnd(parentEnd: number): number {
    const end = this.lengthEnd();
    if (end > parentEnd)
      throw new OtlpWireError(`a message's length runs past the end of its parent at byte ${this.pos}`);
    return end;
  }

  /** Skips a field no decoder here reads (an unknown one), or refuses a known one in another wire type. */
  skip(tag: number, end: number, message: string, groupDepth = 0): void {
    const wireType = tag & 7;
    switch (wireType) {
      case VARINT:
        this.skipVarint();
        break;
      case FIXED64:
        this.need(8);
        this.pos += 8;
        break;
      case LENGTH_DELIMITED:
        this.pos = this.lengthEnd();
        break;
      case FIXED32:
        this.need(4);
        this.pos += 4;
        break;
      case START_GROUP: {
        if (groupDepth >= MAX_GROUP_DEPTH) throw new OtlpWireError("unknown groups nest too deep to skip");
        const field = tag >>> WIRE_TYPE_BITS;
        for (;;) {
          if (this.pos >= end) throw new OtlpWireError(`an unknown group in ${message} has no end`);
          const inner = this.tag();
          if ((inner & 7) === END_GROUP) {
            if (inner >>> WIRE_TYPE_BITS !== field) throw new OtlpWireError("invalid end group tag");
            break;
          }
          this.skip(inner, end, message, groupDepth + 1);
        }
        break;
      }
      default:
        throw new OtlpWireError(`cannot read wire type ${wireType} in ${message} at byte ${this.pos}`);
    }
    if (this.pos > end) throw new OtlpWireError(`a field of ${message} runs past the end of its message`);
  }

  /** Refuses a known field sent in a wire type that is not its own. */
  wrongType(tag: number, message: string): never {
    throw new OtlpWireError(
      `field ${tag >>> WIRE_TYPE_BITS} of ${message} has wire type ${tag & 7}, which is not its own`,
    );
  }

  private lengthEnd(): number {
    const length = this.uint32();
    const end = this.pos + length;
    if (end > this.bytes.length)
      throw new OtlpWireError("premature end of data inside a length-delimited field");
    return end;
  }

  private need(bytes: number): void {
    if (this.pos + bytes > this.bytes.length)
      throw new OtlpWireError("premature end of data inside a fixed-width field");
  }
}

/** A tag of field `field` in wire type `wireType`. */
function tagOf(field: number, wireType: number): number {
  return (field << WIRE_TYPE_BITS) | wireType;
}

/** Tags as constants, so that each message's switch compares numbers. */
const LD = (field: number) => tagOf(field, LENGTH_DELIMITED);
const VI = (field: number) => tagOf(field, VARINT);
const F64 = (field: number) => tagOf(field, FIXED64);
const F32 = (field: number) => tagOf(field, FIXED32);

/**
 * Reads a message's fields up to `end`: `read` takes the field and returns true, or returns false
 * for a field it does not know, which is then skipped (or refused, in a wire type of a known field:
 * `known` lists the known fields' numbers).
 */
function readFields(
  r: WireReader,
  end: number,
  message: string,
  known: ReadonlySet<number>,
  read: (tag: number) => boolean,
): void {
  while (r.pos < end) {
    const tag = r.tag();
    if (read(tag)) {
      if (r.pos > end) throw new OtlpWireError(`a field of ${message} runs past the end of its message`);
      continue;
    }
    if (known.has(tag >>> WIRE_TYPE_BITS)) r.wrongType(tag, message);
    r.skip(tag, end, message);
  }
}

const REQUEST_FIELDS = new Set([1]);
const RESOURCE_SPANS_FIELDS = new Set([1, 2, 3]);
function readResourceSpans(r: WireReader, end: number): ResourceSpans {
  const out: ResourceSpans = {
    $typeName: "opentelemetry.proto.trace.v1.ResourceSpans",
    scopeSpans: [],
    schemaUrl: "",
  };
  readFields(r, end, "ResourceSpans", RESOURCE_SPANS_FIELDS, (tag) => {
    if (tag === LD(1)) out.resource = readResource(r, r.messageEnd(end), out.resource);
    else if (tag === LD(2)) out.scopeSpans.push(readScopeSpans(r, r.messageEnd(end)));
    else if (tag === LD(3)) out.schemaUrl = r.string();
    else return false;
    return true;
  });
  return out;
}

const RESOURCE_FIELDS = new Set([1, 2, 3]);
function readResource(r: WireReader, end: number, into: Resource | undefined): Resource {
  const out: Resource = into ?? {
    $typeName: "opentelemetry.proto.resource.v1.Resource",
    attributes: [],
    droppedAttributesCount: 0,
    entityRefs: [],
  };
  readFields(r, end, "Resource", RESOURCE_FIELDS, (tag) => {
    if (tag === LD(1)) out.attributes.push(readKeyValue(r, r.messageEnd(end), 1));
    else if (tag === VI(2)) out.droppedAttributesCount = r.uint32();
    else if (tag === LD(3)) out.entityRefs.push(readEntityRef(r, r.messageEnd(end)));
    else return false;
    return true;
  });
  return out;
}

const ENTITY_REF_FIELDS = new Set([1, 2, 3, 4]);
function readEntityRef(r: WireReader, end: number): EntityRef {
  const out: EntityRef = {
    $typeName: "opentelemetry.proto.common.v1.EntityRef",
    schemaUrl: "",
    type: "",
    idKeys: [],
    descriptionKeys: [],
  };
  readFields(r, end, "EntityRef", ENTITY_REF_FIELDS, (tag) => {
    if (tag === LD(1)) out.schemaUrl = r.string();
    else if (tag === LD(2)) out.type = r.string();
    else if (tag === LD(3)) out.idKeys.push(r.string());
    else if (tag === LD(4)) out.descriptionKeys.push(r.string());
    else return false;
    return true;
  });
  return out;
}

const SCOPE_SPANS_FIELDS = new Set([1, 2, 3]);
function readScopeSpans(r: WireReader, end: number): ScopeSpans {
  const out: ScopeSpans = {
    $typeName: "opentelemetry.proto.trace.v1.ScopeSpans",
    spans: [],
    schemaUrl: "",
  };
  readFields(r, end, "ScopeSpans", SCOPE_SPANS_FIELDS, (tag) => {
    if (tag === LD(1)) out.scope = readScope(r, r.messageEnd(end), out.scope);
    else if (tag === LD(2)) out.spans.push(readSpan(r, r.messageEnd(end)));
    else if (tag === LD(3)) out.schemaUrl = r.string();
    else return false;
    return true;
  });
  return out;
}

const SCOPE_FIELDS = new Set([1, 2, 3, 4]);
function readScope(r: WireReader, end: number, into: InstrumentationScope | undefined): InstrumentationScope {
  const out: InstrumentationScope = into ?? {
    $typeName: "opentelemetry.proto.common.v1.InstrumentationScope",
    name: "",
    version: "",
    attributes: [],
    droppedAttributesCount: 0,
  };
  readFields(r, end, "InstrumentationScope", SCOPE_FIELDS, (tag) => {
    if (tag === LD(1)) out.name = r.string();
    else if (tag === LD(2)) out.version = r.string();
    else if (tag === LD(3)) out.attributes.push(readKeyValue(r, r.messageEnd(end), 1));
    else if (tag === VI(4)) out.droppedAttributesCount = r.uint32();
    else return false;
    return true;
  });
  return out;
}

const SPAN_FIELDS = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
function readSpan(r: WireReader, end: number): Span {
  const out: Span = {
    $typeName: "opentelemetry.proto.trace.v1.Span",
    traceId: NO_BYTES,
    spanId: NO_BYTES,
    traceState: "",
    parentSpanId: NO_BYTES,
    flags: 0,
    name: "",
    kind: 0,
    startTimeUnixNano: 0n,
    endTimeUnixNano: 0n,
    attributes: [],
    droppedAttributesCount: 0,
    events: [],
    droppedEventsCount: 0,
    links: [],
    droppedLinksCount: 0,
  };
  readFields(r, end, "Span", SPAN_FIELDS, (tag) => {
    switch (tag) {
      case LD(1):
        out.traceId = r.bytesField();
        break;
      case LD(2):
        out.spanId = r.bytesField();
        break;
      case LD(3):
        out.traceState = r.string();
        break;
      case LD(4):
        out.parentSpanId = r.bytesField();
        break;
      case LD(5):
        out.name = r.string();
        break;
      case VI(6):
        out.kind = r.uint32() | 0;
        break;
      case F64(7):
        out.startTimeUnixNano = r.fixed64();
        break;
      case F64(8):
        out.endTimeUnixNano = r.fixed64();
        break;
      case LD(9):
        out.attributes.push(readKeyValue(r, r.messageEnd(end), 1));
        break;
      case VI(10):
        out.droppedAttributesCount = r.uint32();
        break;
      case LD(11):
        out.events.push(readEvent(r, r.messageEnd(end)));
        break;
      case VI(12):
        out.droppedEventsCount = r.uint32();
        break;
      case LD(13):
        out.links.push(readLink(r, r.messageEnd(end)));
        break;
      case VI(14):
        out.droppedLinksCount = r.uint32();
        break;
      case LD(15):
        out.status = readStatus(r, r.messageEnd(end), out.status);
        break;
      case F32(16):
        out.flags = r.fixed32();
        break;
      default:
        return false;
    }
    return true;
  });
  return out;
}

const EVENT_FIELDS = new Set([1, 2, 3, 4]);
function readEvent(r: WireReader, end: number): Span_Event {
  const out: Span_Event = {
    $typeName: "opentelemetry.proto.trace.v1.Span.Event",
    timeUnixNano: 0n,
    name: "",
    attributes: [],
    droppedAttributesCount: 0,
  };
  readFields(r, end, "Span.Event", EVENT_FIELDS, (tag) => {
    if (tag === F64(1)) out.timeUnixNano = r.fixed64();
    else if (tag === LD(2)) out.name = r.string();
    else if (tag === LD(3)) out.attributes.push(readKeyValue(r, r.messageEnd(end), 1));
    else if (tag === VI(4)) out.droppedAttributesCount = r.uint32();
    else return false;
    return true;
  });
  return out;
}

const LINK_FIELDS = new Set([1, 2, 3, 4, 5, 6]);
function readLink(r: WireReader, end: number): Span_Link {
  const out: Span_Link = {
    $typeName: "opentelemetry.proto.trace.v1.Span.Link",
    traceId: NO_BYTES,
    spanId: NO_BYTES,
    traceState: "",
    attributes: [],
    droppedAttributesCount: 0,
    flags: 0,
  };
  readFields(r, end, "Span.Link", LINK_FIELDS, (tag) => {
    if (tag === LD(1)) out.traceId = r.bytesField();
    else if (tag === LD(2)) out.spanId = r.bytesField();
    else if (tag === LD(3)) out.traceState = r.string();
    else if (tag === LD(4)) out.attributes.push(readKeyValue(r, r.messageEnd(end), 1));
    else if (tag === VI(5)) out.droppedAttributesCount = r.uint32();
    else if (tag === F32(6)) out.flags = r.fixed32();
    else return false;
    return true;
  });
  return out;
}

const STATUS_FIELDS = new Set([2, 3]);
function readStatus(r: WireReader, end: number, into: Status | undefined): Status {
  const out: Status = into ?? { $typeName: "opentelemetry.proto.trace.v1.Status", message: "", code: 0 };
  readFields(r, end, "Status", STATUS_FIELDS, (tag) => {
    if (tag === LD(2)) out.message = r.string();
    else if (tag === VI(3)) out.code = r.uint32() | 0;
    else return false;
    return true;
  });
  return out;
}

/**
 * `depth` counts attribute-value levels: 1 for a span's (or resource's, scope's, event's, link's)
 * own attributes, one more inside each array or key-value list value.
 */
const KEY_VALUE_FIELDS = new Set([1, 2]);
function readKeyValue(r: WireReader, end: number, depth: number): KeyValue {
  const out: KeyValue = { $typeName: "opentelemetry.proto.common.v1.KeyValue", key: "" };
  readFields(r, end, "KeyValue", KEY_VALUE_FIELDS, (tag) => {
    if (tag === LD(1)) out.key = r.string();
    else if (tag === LD(2)) out.value = readAnyValue(r, r.messageEnd(end), depth, out.value);
    else return false;
    return true;
  });
  return out;
}

const ANY_VALUE_FIELDS = new Set([1, 2, 3, 4, 5, 6, 7]);
function readAnyValue(r: WireReader, end: number, depth: number, into: AnyValue | undefined): AnyValue {
  const out: AnyValue = into ?? {
    $typeName: "opentelemetry.proto.common.v1.AnyValue",
    value: { case: undefined },
  };
  readFields(r, end, "AnyValue", ANY_VALUE_FIELDS, (tag) => {
    switch (tag) {
      case LD(1):
        out.value = { case: "stringValue", value: r.string() };
        break;
      case VI(2):
        out.value = { case: "boolValue", value: r.bool() };
        break;
      case VI(3):
        out.value = { case: "intValue", value: r.int64() };
        break;
      case F64(4):
        out.value = { case: "doubleValue", value: r.double() };
        break;
      case LD(5): {
        const merged = out.value.case === "arrayValue" ? out.value.value : undefined;
        out.value = { case: "arrayValue", value: readArrayValue(r, r.messageEnd(end), depth + 1, merged) };
        break;
      }
      case LD(6): {
        const merged = out.value.case === "kvlistValue" ? out.value.value : undefined;
        out.value = { case: "kvlistValue", value: readKeyValueList(r, r.messageEnd(end), depth + 1, merged) };
        break;
      }
      case LD(7):
        out.value = { case: "bytesValue", value: r.bytesField() };
        break;
      default:
        return false;
    }
    return true;
  });
  return out;
}

function tooDeep(depth: number): void {
  if (depth > MAX_JSON_DEPTH)
    throw new OtlpWireError(
      `attribute values nest arrays and key-value lists more than ${MAX_JSON_DEPTH} levels deep, the most a request may`,
    );
}

const LIST_FIELDS = new Set([1]);
function readArrayValue(r: WireReader, end: number, depth: number, into: ArrayValue | undefined): ArrayValue {
  tooDeep(depth);
  const out: ArrayValue = into ?? { $typeName: "opentelemetry.proto.common.v1.ArrayValue", values: [] };
  readFields(r, end, "ArrayValue", LIST_FIELDS, (tag) => {
    if (tag !== LD(1)) return false;
    out.values.push(readAnyValue(r, r.messageEnd(end), depth, undefined));
    return true;
  });
  return out;
}

function readKeyValueList(
  r: WireReader,
  end: number,
  depth: number,
  into: KeyValueList | undefined,
): KeyValueList {
  tooDeep(depth);
  const out: KeyValueList = into ?? { $typeName: "opentelemetry.proto.common.v1.KeyValueList", values: [] };
  readFields(r, end, "KeyValueList", LIST_FIELDS, (tag) => {
    if (tag !== LD(1)) return false;
    out.values.push(readKeyValue(r, r.messageEnd(end), depth));
    return true;
  });
  return out;
}
