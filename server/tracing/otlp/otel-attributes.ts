/**
 * OTLP attribute values as plain JSON: what span attributes, event attributes and resource
 * attributes become in a run's inputs, outputs and `extra`.
 */
import type { AnyValue, KeyValue } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { type SpanScreen, screenedText, UnstorableSpanValue } from "./span-screen.js";

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
 * recursively; an empty value is null. Every string (and key) is screened: one that cannot be
 * stored throws {@link UnstorableSpanValue} naming `where` and `key` (the attribute's).
 */
export function attributeValue(
  value: AnyValue | undefined,
  screen: SpanScreen,
  where: string,
  key: string,
): AttributeValue {
  const v = value?.value;
  switch (v?.case) {
    case "stringValue":
      return screenedText(screen, v.value, where, key);
    case "boolValue":
      return v.value;
    case "intValue":
      return v.value >= MIN_SAFE && v.value <= MAX_SAFE ? Number(v.value) : v.value.toString();
    case "doubleValue":
      return Number.isFinite(v.value) ? v.value : String(v.value);
    case "bytesValue":
      return Buffer.from(v.value.buffer, v.value.byteOffset, v.value.byteLength).toString("base64");
    case "arrayValue":
      return v.value.values.map((item) => attributeValue(item, screen, where, key));
    case "kvlistValue":
      return attributeObject(v.value.values, screen, `${where} "${key}" member`);
    default:
      return null;
  }
}

/** The range of 64-bit integers a double holds exactly. */
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Attributes as one object (a repeated key keeps its last value); `where` names them in a refusal
 * (`resource attribute`, and the key follows).
 */
export function attributeObject(
  attributes: readonly KeyValue[],
  screen: SpanScreen,
  where: string,
): { [key: string]: AttributeValue } {
  const object: { [key: string]: AttributeValue } = {};
  for (const { key, value } of attributes)
    object[screenedKey(screen, where, key)] = attributeValue(value, screen, where, key);
  return object;
}

/** Attributes by key, for the mapping to read (and mark as read) one by one. */
export function attributeMap(
  attributes: readonly KeyValue[],
  screen: SpanScreen,
  where: string,
): Map<string, AttributeValue> {
  const map = new Map<string, AttributeValue>();
  for (const { key, value } of attributes)
    map.set(screenedKey(screen, where, key), attributeValue(value, screen, where, key));
  return map;
}

/** `key`, screened. */
function screenedKey(screen: SpanScreen, where: string, key: string): string {
  const problem = screen.text(key);
  if (problem !== undefined) throw new UnstorableSpanValue(`${where} key ${JSON.stringify(key)}`, problem);
  return key;
}
