/**
 * OTLP attribute values as plain JSON: what span attributes, event attributes and resource
 * attributes become in a run's inputs, outputs and `extra`.
 */
import type { AnyValue, KeyValue } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";

/** A JSON value, as attributes become one. */
export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | AttributeValue[]
  | { [key: string]: AttributeValue };

/**
 * The JSON form of an attribute value: strings, booleans and doubles as they are (a double that is
 * not finite as its text, which JSON has no number for), 64-bit integers as numbers when they fit
 * a double exactly and as decimal text beyond, bytes as base64 text, arrays and key-value lists
 * recursively; an empty value is null.
 */
export function attributeValue(value: AnyValue | undefined): AttributeValue {
  const v = value?.value;
  switch (v?.case) {
    case "stringValue":
    case "boolValue":
      return v.value;
    case "intValue":
      return v.value >= BigInt(Number.MIN_SAFE_INTEGER) && v.value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(v.value)
        : v.value.toString();
    case "doubleValue":
      return Number.isFinite(v.value) ? v.value : String(v.value);
    case "bytesValue":
      return Buffer.from(v.value).toString("base64");
    case "arrayValue":
      return v.value.values.map(attributeValue);
    case "kvlistValue":
      return attributeObject(v.value.values);
    default:
      return null;
  }
}

/** Attributes as one object (a repeated key keeps its last value). */
export function attributeObject(attributes: readonly KeyValue[]): { [key: string]: AttributeValue } {
  const object: { [key: string]: AttributeValue } = {};
  for (const { key, value } of attributes) object[key] = attributeValue(value);
  return object;
}

/** Attributes by key, for the mapping to read (and mark as read) one by one. */
export function attributeMap(attributes: readonly KeyValue[]): Map<string, AttributeValue> {
  const map = new Map<string, AttributeValue>();
  for (const { key, value } of attributes) map.set(key, attributeValue(value));
  return map;
}
