import {
  type DescEnum,
  type DescField,
  type DescMessage,
  type JsonValue,
  ScalarType,
} from "@bufbuild/protobuf";

/**
 * Turns a URL string (a path variable or a query parameter) into the proto3 JSON value of one
 * field element, or returns `undefined` when the string is not a valid value of that type.
 */
export type StringConverter = (raw: string) => JsonValue | undefined;

/** The largest unsigned 32-bit integer. */
const maxUint32 = 0xffff_ffff;
/** The int32 range. */
const minInt32 = -0x8000_0000;
const maxInt32 = 0x7fff_ffff;

const signedInteger = /^-?\d+$/;
const unsignedInteger = /^\d+$/;

/** Well-known types whose JSON form is a string that `fromJson` parses and validates. */
const stringWellKnownTypes = new Set([
  "google.protobuf.Timestamp",
  "google.protobuf.Duration",
  "google.protobuf.FieldMask",
]);

/** Wrapper types (`google.protobuf.Int32Value`, ...): their JSON is the wrapped scalar. */
const wrapperTypes = new Set([
  "google.protobuf.DoubleValue",
  "google.protobuf.FloatValue",
  "google.protobuf.Int64Value",
  "google.protobuf.UInt64Value",
  "google.protobuf.Int32Value",
  "google.protobuf.UInt32Value",
  "google.protobuf.BoolValue",
  "google.protobuf.StringValue",
  "google.protobuf.BytesValue",
]);

/**
 * The converter for one element of `field` (for a repeated field, one item), or `undefined` when
 * the field cannot be given as a URL string (maps, and messages other than wrappers, Timestamp,
 * Duration and FieldMask).
 */
export function stringConverter(field: DescField): StringConverter | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return scalarConverter(field.scalar);
    case "enum":
      return enumConverter(field.enum);
    case "message":
      return messageConverter(field.message);
    case "list":
      if (field.listKind === "scalar") return scalarConverter(field.scalar);
      if (field.listKind === "enum") return enumConverter(field.enum);
      return messageConverter(field.message);
    case "map":
      return undefined;
  }
}

function scalarConverter(scalar: ScalarType): StringConverter {
  switch (scalar) {
    case ScalarType.BOOL:
      return (raw) =>
        raw === "true" || raw === "1" ? true : raw === "false" || raw === "0" ? false : undefined;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return (raw) => integerInRange(raw, minInt32, maxInt32);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return (raw) => integerInRange(raw, 0, maxUint32);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      // Kept as a string (proto3 JSON's form for 64-bit ints); fromJson checks the range.
      return (raw) => (signedInteger.test(raw) ? raw : undefined);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return (raw) => (unsignedInteger.test(raw) ? raw : undefined);
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return (raw) => {
        if (raw === "NaN" || raw === "Infinity" || raw === "-Infinity") return raw;
        const value = raw.trim() === raw && raw !== "" ? Number(raw) : Number.NaN;
        return Number.isFinite(value) ? value : undefined;
      };
    case ScalarType.STRING:
    case ScalarType.BYTES:
      // Bytes stay base64 text; fromJson decodes and validates them.
      return (raw) => raw;
  }
}

function integerInRange(raw: string, min: number, max: number): number | undefined {
  if (!signedInteger.test(raw)) return undefined;
  const value = Number(raw);
  return value >= min && value <= max ? value : undefined;
}

function enumConverter(descEnum: DescEnum): StringConverter {
  const names = new Set(descEnum.values.map((v) => v.name));
  return (raw) => {
    if (names.has(raw)) return raw;
    return integerInRange(raw, minInt32, maxInt32);
  };
}

function messageConverter(message: DescMessage): StringConverter | undefined {
  if (stringWellKnownTypes.has(message.typeName)) return (raw) => raw;
  if (wrapperTypes.has(message.typeName)) return scalarConverter(message.fields[0]!.scalar!);
  return undefined;
}

/** User-facing descriptions of the JSON form of well-known message types. */
const wellKnownDescriptions: Readonly<Record<string, string>> = {
  "google.protobuf.Timestamp": 'an RFC 3339 timestamp such as "2024-01-31T12:00:00Z"',
  "google.protobuf.Duration": 'a duration in seconds such as "1.5s"',
  "google.protobuf.FieldMask": 'a comma-separated list of field names such as "name,tags"',
  "google.protobuf.Struct": "a JSON object",
  "google.protobuf.ListValue": "a JSON array",
  "google.protobuf.Value": "any JSON value",
  "google.protobuf.Empty": "an empty object",
  "google.protobuf.Any": 'an object with an "@type" member',
};

/**
 * Describes, for an error message, what a valid value of `field` looks like (for a repeated
 * field: the whole array).
 */
export function describeField(field: DescField): string {
  switch (field.fieldKind) {
    case "list":
      return `an array whose items are each ${describeElement(field)}`;
    case "map":
      return `an object whose values are each ${describeElement(field)}`;
    default:
      return describeElement(field);
  }
}

/** Describes one element of `field`: the field itself, or one item of a list or map. */
export function describeElement(field: DescField): string {
  if (field.enum) return describeEnum(field.enum);
  if (field.message) return describeMessage(field.message);
  return describeScalar(field.scalar!);
}

/** Describes the JSON form of a message type. */
export function describeMessage(message: DescMessage): string {
  if (wrapperTypes.has(message.typeName)) return describeScalar(message.fields[0]!.scalar!);
  return wellKnownDescriptions[message.typeName] ?? "a JSON object";
}

function describeEnum(descEnum: DescEnum): string {
  return `one of ${descEnum.values.map((v) => v.name).join(", ")}`;
}

function describeScalar(scalar: ScalarType): string {
  switch (scalar) {
    case ScalarType.BOOL:
      return "true or false";
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return "a 32-bit integer";
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return "an unsigned 32-bit integer";
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return "a 64-bit integer (a number or a string of digits)";
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return "an unsigned 64-bit integer (a number or a string of digits)";
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return "a number";
    case ScalarType.STRING:
      return "a string";
    case ScalarType.BYTES:
      return "a base64-encoded string";
  }
}
