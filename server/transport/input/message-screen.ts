import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import {
  MAX_JSON_DEPTH,
  MAX_TIMESTAMP_SECONDS,
  MIN_TIMESTAMP_SECONDS,
  TIMESTAMP_RANGE_TEXT,
} from "./input-limits.js";
import {
  type InputProblem,
  memberNameProblem,
  numberProblem,
  type PathStep,
  pathOf,
  textProblem,
  tooDeep,
} from "./input-problem.js";

/** Why a google.protobuf.Value that sets none of its kinds is refused. */
const emptyValue =
  "is a google.protobuf.Value that sets none of its kinds; send null_value for null, or one of number_value, string_value, bool_value, struct_value, list_value";

import { findJsonProblem } from "./json-screen.js";

/**
 * The decoding layer's check of a decoded request message, the same on every protocol (REST, Connect
 * JSON and binary, gRPC, gRPC-Web): the first value the server refuses, or undefined. It refuses
 * strings and map keys holding NUL or a lone surrogate; google.protobuf.Struct, Value and ListValue
 * content holding those or nested deeper than MAX_JSON_DEPTH (levels counted as in the message's
 * JSON form), and Values that set no kind (which have no JSON form); float and double values that are not finite; timestamps outside 0001..9999.
 *
 * Each message type is compiled once into the list of its fields that can hold such a value, so a
 * message without strings, floats, timestamps or Structs costs one lookup. Iterative, with an
 * explicit stack: safe on whatever nesting the decoder let through.
 */
export function findMessageProblem(schema: DescMessage, message: unknown): InputProblem | undefined {
  return screenWith(planOf(schema), message);
}

/**
 * {@link findMessageProblem} for one message type, compiled ahead: what the bound-service pipeline
 * runs on every call. Undefined when the type holds nothing to screen.
 */
export function messageScreen(
  schema: DescMessage,
): ((message: unknown) => InputProblem | undefined) | undefined {
  const plan = planOf(schema);
  return plan.length === 0 ? undefined : (message) => screenWith(plan, message);
}

function screenWith(plan: readonly FieldPlan[], message: unknown): InputProblem | undefined {
  if (plan.length === 0) return undefined;
  const pending: Pending[] = [{ kind: "message", plan, value: message, step: undefined, depth: 1 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const problem = screen(next, pending);
    if (problem) return problem;
  }
  return undefined;
}

/** What the elements of a field are, as far as the screen cares. */
type ElementKind =
  | { readonly kind: "text" | "number" | "timestamp" | "struct" | "value" | "list-value" }
  | { readonly kind: "wrapped"; readonly inner: "text" | "number" }
  | { readonly kind: "message"; readonly plan: readonly FieldPlan[] };

/** One field that can hold a refused value. */
interface FieldPlan {
  readonly field: DescField;
  /** Undefined for a map whose keys need a check but whose values do not. */
  readonly element: ElementKind | undefined;
  /** A map with string keys. */
  readonly textKeys: boolean;
}

/**
 * A container still to screen. `depth` is its nesting level in the JSON form of the request; a
 * google.protobuf.Value is no level of its own (the Struct or ListValue it holds is), so a Value
 * carries the level its content would have.
 */
type Pending =
  | {
      readonly kind: "message";
      readonly plan: readonly FieldPlan[];
      readonly value: unknown;
      readonly step: PathStep | undefined;
      readonly depth: number;
    }
  | {
      readonly kind: "value" | "struct-message" | "list-value";
      readonly value: unknown;
      readonly step: PathStep | undefined;
      readonly depth: number;
    };

const plans = new WeakMap<DescMessage, FieldPlan[]>();
/** Message types whose plan is being compiled (a recursive reference must not be judged empty yet). */
const compiling = new Set<DescMessage>();

/** The fields of `schema` worth screening, compiled on first use. */
function planOf(schema: DescMessage): FieldPlan[] {
  const known = plans.get(schema);
  if (known) return known;
  const plan: FieldPlan[] = [];
  plans.set(schema, plan);
  compiling.add(schema);
  try {
    for (const field of schema.fields) {
      const element = elementOf(field);
      const textKeys = field.fieldKind === "map" && field.mapKey === ScalarType.STRING;
      if (element || textKeys) plan.push({ field, element, textKeys });
    }
  } finally {
    compiling.delete(schema);
  }
  return plan;
}

function elementOf(field: DescField): ElementKind | undefined {
  const message = field.message;
  if (message === undefined) {
    if (field.enum !== undefined) return undefined;
    if (field.scalar === ScalarType.STRING) return { kind: "text" };
    if (field.scalar === ScalarType.DOUBLE || field.scalar === ScalarType.FLOAT) return { kind: "number" };
    return undefined;
  }
  switch (message.typeName) {
    case "google.protobuf.Timestamp":
      return { kind: "timestamp" };
    case "google.protobuf.Struct":
      return { kind: "struct" };
    case "google.protobuf.Value":
      return { kind: "value" };
    case "google.protobuf.ListValue":
      return { kind: "list-value" };
    case "google.protobuf.StringValue":
      return { kind: "wrapped", inner: "text" };
    case "google.protobuf.DoubleValue":
    case "google.protobuf.FloatValue":
      return { kind: "wrapped", inner: "number" };
  }
  // Other well-known types hold no text (Any's payload is bytes) and are checked by their decoders.
  if (message.typeName.startsWith("google.protobuf.")) return undefined;
  const plan = planOf(message);
  return plan.length === 0 && !compiling.has(message) ? undefined : { kind: "message", plan };
}

function screen(item: Pending, pending: Pending[]): InputProblem | undefined {
  const { value, step, depth } = item;
  switch (item.kind) {
    case "message":
      if (depth > MAX_JSON_DEPTH) return { path: pathOf(step), reason: tooDeep };
      return screenFields(item.plan, value as Record<string, unknown>, step, depth, pending);
    case "value": {
      const kind = (value as { kind?: { case?: string; value?: unknown } }).kind;
      switch (kind?.case) {
        case "stringValue":
          return problemAt(step, undefined, textProblem(kind.value as string));
        case "numberValue":
          return problemAt(step, undefined, numberProblem(kind.value as number));
        case "structValue":
          pending.push({ kind: "struct-message", value: kind.value, step, depth });
          return undefined;
        case "listValue":
          pending.push({ kind: "list-value", value: kind.value, step, depth });
          return undefined;
        case undefined:
          // Only the binary encodings can carry one; its JSON form does not exist, so nothing could store it.
          return { path: pathOf(step), reason: emptyValue };
        default:
          return undefined;
      }
    }
    case "struct-message": {
      if (depth > MAX_JSON_DEPTH) return { path: pathOf(step), reason: tooDeep };
      for (const [key, entry] of Object.entries((value as { fields: Record<string, unknown> }).fields)) {
        const nameProblem = memberNameProblem(key);
        if (nameProblem) return { path: pathOf(step), reason: nameProblem };
        pending.push({ kind: "value", value: entry, step: { parent: step, key }, depth: depth + 1 });
      }
      return undefined;
    }
    case "list-value": {
      if (depth > MAX_JSON_DEPTH) return { path: pathOf(step), reason: tooDeep };
      const values = (value as { values: unknown[] }).values;
      for (let i = 0; i < values.length; i++) {
        pending.push({ kind: "value", value: values[i], step: { parent: step, key: i }, depth: depth + 1 });
      }
      return undefined;
    }
  }
}

function screenFields(
  plan: readonly FieldPlan[],
  message: Record<string, unknown>,
  step: PathStep | undefined,
  depth: number,
  pending: Pending[],
): InputProblem | undefined {
  for (const { field, element, textKeys } of plan) {
    let value: unknown;
    if (field.oneof) {
      const oneof = message[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
      if (oneof?.case !== field.localName) continue;
      value = oneof.value;
    } else {
      value = message[field.localName];
    }
    if (value === undefined || value === null) continue;
    if (field.fieldKind !== "list" && field.fieldKind !== "map") {
      if (!element) continue;
      const problem = screenElement(
        element,
        value,
        step,
        field.name,
        depth + 1,
        pending,
        field.oneof === undefined,
      );
      if (problem) return problem;
      continue;
    }
    // The array or object of the field's JSON form is a level of its own.
    const at: PathStep = { parent: step, key: field.name };
    if (depth + 1 > MAX_JSON_DEPTH) return { path: pathOf(at), reason: tooDeep };
    if (field.fieldKind === "list") {
      if (!element) continue;
      const list = value as unknown[];
      for (let i = 0; i < list.length; i++) {
        const problem = screenElement(element, list[i], at, i, depth + 2, pending, false);
        if (problem) return problem;
      }
      continue;
    }
    for (const key of Object.keys(value)) {
      if (textKeys) {
        const nameProblem = memberNameProblem(key);
        if (nameProblem) return { path: pathOf(at), reason: nameProblem };
      }
      if (!element) continue;
      const entry = (value as Record<string, unknown>)[key];
      const problem = screenElement(element, entry, at, key, depth + 2, pending, false);
      if (problem) return problem;
    }
  }
  return undefined;
}

/**
 * Screens one element, `key` of `parent` (a container there would be at level `depth`); containers
 * go onto `pending`. Its path step is only built when needed. `unwrapped`: the element sits in a
 * singular field outside a oneof, where protobuf-es represents a wrapper type by its plain value.
 */
function screenElement(
  element: ElementKind,
  value: unknown,
  parent: PathStep | undefined,
  key: string | number,
  depth: number,
  pending: Pending[],
  unwrapped: boolean,
): InputProblem | undefined {
  switch (element.kind) {
    case "text":
      return typeof value === "string" ? problemAt(parent, key, textProblem(value)) : undefined;
    case "number":
      return typeof value === "number" ? problemAt(parent, key, numberProblem(value)) : undefined;
    case "wrapped": {
      const inner = unwrapped ? value : (value as { value?: unknown }).value;
      return screenElement({ kind: element.inner }, inner, parent, key, depth, pending, true);
    }
    case "timestamp":
      return problemAt(parent, key, timestampProblem(value as { seconds?: unknown; nanos?: unknown }));
    case "struct":
      // protobuf-es represents a Struct in a message field as a plain JsonObject.
      if ((value as { $typeName?: unknown }).$typeName !== "google.protobuf.Struct")
        return findJsonProblem(value, { parent, key }, depth);
      pending.push({ kind: "struct-message", value, step: { parent, key }, depth });
      return undefined;
    case "value":
      pending.push({ kind: "value", value, step: { parent, key }, depth });
      return undefined;
    case "list-value":
      pending.push({ kind: "list-value", value, step: { parent, key }, depth });
      return undefined;
    case "message":
      pending.push({ kind: "message", plan: element.plan, value, step: { parent, key }, depth });
      return undefined;
  }
}

function timestampProblem(timestamp: { seconds?: unknown; nanos?: unknown }): string | undefined {
  const { seconds, nanos } = timestamp;
  const inRange =
    typeof seconds === "bigint" &&
    typeof nanos === "number" &&
    seconds >= MIN_TIMESTAMP_SECONDS &&
    seconds <= MAX_TIMESTAMP_SECONDS &&
    nanos >= 0 &&
    nanos <= 999_999_999;
  return inRange ? undefined : `must be a timestamp from ${TIMESTAMP_RANGE_TEXT}`;
}

/** The problem `reason` at `key` of `parent` (or at `parent` itself without a key), if any. */
function problemAt(
  parent: PathStep | undefined,
  key: string | number | undefined,
  reason: string | undefined,
): InputProblem | undefined {
  if (reason === undefined) return undefined;
  return { path: pathOf(key === undefined ? parent : { parent, key }), reason };
}
