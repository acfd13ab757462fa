import { isUtf8 } from "node:buffer";
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { MAX_JSON_DEPTH } from "./input-limits.js";
import { type InputProblem, type PathStep, pathOf, tooDeep } from "./input-problem.js";

/**
 * The decoding layer's check of a binary request message (Connect binary, gRPC, gRPC-Web) before
 * protobuf-es decodes it: its wire structure (tags, wire types, lengths), UTF-8 of its string
 * fields, and its nesting (levels counted as in the message's JSON form, as the other screens
 * count them). protobuf-es refuses such input too, but connect-es reports every binary decoding
 * failure as INTERNAL, an HTTP 500 on the Connect protocol; found here, they are INVALID_ARGUMENT
 * naming the field. Iterative, with an explicit stack: any nesting is walked safely.
 *
 * Not checked here: the contents of packed repeated numbers (their lengths are) and unknown fields
 * beyond their framing.
 */
export function findBinaryProblem(schema: DescMessage, bytes: Uint8Array): InputProblem | undefined {
  const reader = new WireReader(bytes);
  const frames: Frame[] = [{ kind: "message", schema, end: bytes.length, depth: 1, step: undefined }];
  try {
    for (let frame = frames.at(-1); frame !== undefined; frame = frames.at(-1)) {
      if (reader.pos >= frame.end) {
        if (reader.pos > frame.end) return malformed(frame.step, "a length runs past the end of its message");
        frames.pop();
        continue;
      }
      const [number, wireType] = reader.tag();
      const problem =
        frame.kind === "message"
          ? readField(reader, frame, number, wireType, frames)
          : readEntryField(reader, frame, number, wireType, frames);
      if (problem) return problem;
    }
  } catch (error) {
    return malformed(undefined, error instanceof Error ? error.message : String(error));
  }
  return undefined;
}

/** protobuf-es's reader, with access to its bytes (to check string payloads in place). */
class WireReader extends BinaryReader {
  /** The bytes `pos` indexes. */
  get data(): Uint8Array {
    return this.buf;
  }
}

/** A message being walked, or the entry of a map field (a message of its own on the wire). */
type Frame =
  | {
      readonly kind: "message";
      readonly schema: DescMessage;
      /** Offset just past the message. */
      readonly end: number;
      /** Its level in the JSON form. */
      readonly depth: number;
      readonly step: PathStep | undefined;
      /** List items seen so far, by field number, for their paths. */
      counts?: Map<number, number>;
    }
  | {
      readonly kind: "entry";
      /** The message holding the map field, at `depth`. */
      readonly schema: DescMessage;
      readonly field: DescField & { fieldKind: "map" };
      readonly end: number;
      readonly depth: number;
      /** The map field's own step. */
      readonly step: PathStep;
      /** The entry's key, once read (a well-formed entry sends it first). */
      key?: string;
    };

/** The well-known types whose JSON form is a plain JSON value, not an object of their fields. */
const JSON_VALUE_TYPES = new Set([
  "google.protobuf.Value",
  "google.protobuf.Struct",
  "google.protobuf.ListValue",
]);

const fieldsByNumber = new WeakMap<DescMessage, Map<number, DescField>>();

function fieldOf(schema: DescMessage, number: number): DescField | undefined {
  let fields = fieldsByNumber.get(schema);
  if (!fields) {
    fields = new Map(schema.fields.map((field) => [field.number, field]));
    fieldsByNumber.set(schema, fields);
  }
  return fields.get(number);
}

function readField(
  reader: WireReader,
  frame: Extract<Frame, { kind: "message" }>,
  number: number,
  wireType: WireType,
  frames: Frame[],
): InputProblem | undefined {
  const field = fieldOf(frame.schema, number);
  if (!field) {
    reader.skip(wireType, number);
    return undefined;
  }
  // Inside a Value, Struct or ListValue, paths follow the JSON form: no step for their own fields.
  const step: PathStep =
    JSON_VALUE_TYPES.has(frame.schema.typeName) && frame.step !== undefined
      ? frame.step
      : { parent: frame.step, key: field.name };
  switch (field.fieldKind) {
    case "scalar":
    case "enum":
      return readScalar(
        reader,
        field.fieldKind === "enum" ? ScalarType.INT32 : field.scalar,
        wireType,
        step,
        false,
      );
    case "list": {
      frame.counts ??= new Map();
      const index = frame.counts.get(number) ?? 0;
      frame.counts.set(number, index + 1);
      const item: PathStep = { parent: step, key: index };
      if (field.listKind !== "message") {
        const scalar = field.listKind === "enum" ? ScalarType.INT32 : field.scalar;
        return readScalar(reader, scalar, wireType, item, true);
      }
      return enter(
        reader,
        wireType,
        field.message,
        childDepth(frame.schema, frame.depth, true),
        item,
        frames,
      );
    }
    case "map": {
      if (wireType !== WireType.LengthDelimited) return wrongWireType(step);
      const end = endOf(reader);
      frames.push({ kind: "entry", schema: frame.schema, field, end, depth: frame.depth, step });
      return undefined;
    }
    case "message":
      return enter(
        reader,
        wireType,
        field.message,
        childDepth(frame.schema, frame.depth, false),
        step,
        frames,
      );
  }
}

/** Field 1 of a map entry is its key, field 2 its value; anything else is skipped as unknown. */
function readEntryField(
  reader: WireReader,
  frame: Extract<Frame, { kind: "entry" }>,
  number: number,
  wireType: WireType,
  frames: Frame[],
): InputProblem | undefined {
  const { field } = frame;
  if (number === 1) {
    if (field.mapKey !== ScalarType.STRING)
      return readScalar(reader, field.mapKey, wireType, frame.step, false);
    if (wireType !== WireType.LengthDelimited) return wrongWireType(frame.step);
    const key = readUtf8(reader);
    if (key === undefined) return { path: pathOf(frame.step), reason: notUtf8 };
    frame.key = key;
    return undefined;
  }
  if (number !== 2) {
    reader.skip(wireType, number);
    return undefined;
  }
  const step: PathStep = { parent: frame.step, key: frame.key ?? "(key not yet sent)" };
  if (field.mapKind !== "message") {
    const scalar = field.mapKind === "enum" ? ScalarType.INT32 : field.scalar;
    return readScalar(reader, scalar, wireType, step, false);
  }
  return enter(reader, wireType, field.message, childDepth(frame.schema, frame.depth, true), step, frames);
}

/**
 * The JSON level of a message held by a field of `parent` (at `depth`): one below for a singular
 * field, two for a list item or map value (the array or object is a level). A Struct is itself the
 * object its values sit in, a ListValue the array, and a Value is no level of its own.
 */
function childDepth(parent: DescMessage, depth: number, inListOrMap: boolean): number {
  switch (parent.typeName) {
    case "google.protobuf.Value":
      return depth;
    case "google.protobuf.Struct":
    case "google.protobuf.ListValue":
      return depth + 1;
    default:
      return depth + (inListOrMap ? 2 : 1);
  }
}

function enter(
  reader: WireReader,
  wireType: WireType,
  schema: DescMessage,
  depth: number,
  step: PathStep,
  frames: Frame[],
): InputProblem | undefined {
  if (wireType !== WireType.LengthDelimited) return wrongWireType(step);
  const end = endOf(reader);
  if (schema.typeName !== "google.protobuf.Value" && depth > MAX_JSON_DEPTH)
    return { path: pathOf(step), reason: tooDeep };
  frames.push({ kind: "message", schema, end, depth, step });
  return undefined;
}

/** Reads a length and returns the offset just past its payload, leaving the reader at the payload. */
function endOf(reader: WireReader): number {
  const length = reader.uint32();
  const end = reader.pos + length;
  if (end > reader.len) throw new Error("a length runs past the end of the message");
  return end;
}

function readScalar(
  reader: WireReader,
  scalar: ScalarType,
  wireType: WireType,
  step: PathStep,
  packable: boolean,
): InputProblem | undefined {
  if (scalar === ScalarType.STRING) {
    if (wireType !== WireType.LengthDelimited) return wrongWireType(step);
    const end = endOf(reader);
    const valid = isUtf8(reader.data.subarray(reader.pos, end));
    reader.pos = end;
    return valid ? undefined : { path: pathOf(step), reason: notUtf8 };
  }
  const natural = naturalWireType(scalar);
  if (wireType !== natural && !(packable && wireType === WireType.LengthDelimited))
    return wrongWireType(step);
  reader.skip(wireType);
  return undefined;
}

const notUtf8 = "is not valid UTF-8 text, as protobuf strings must be";

/** Reads a string payload; undefined when it is not UTF-8. */
function readUtf8(reader: WireReader): string | undefined {
  const end = endOf(reader);
  const bytes = reader.data.subarray(reader.pos, end);
  reader.pos = end;
  return isUtf8(bytes)
    ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")
    : undefined;
}

function naturalWireType(scalar: ScalarType): WireType {
  switch (scalar) {
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return WireType.Bit64;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return WireType.Bit32;
    case ScalarType.BYTES:
    case ScalarType.STRING:
      return WireType.LengthDelimited;
    default:
      return WireType.Varint;
  }
}

function wrongWireType(step: PathStep): InputProblem {
  return { path: pathOf(step), reason: "is encoded with the wrong protobuf wire type" };
}

function malformed(step: PathStep | undefined, why: string): InputProblem {
  return { path: pathOf(step), reason: `is not a valid binary protobuf message: ${why}` };
}
