import type { AttributeValue } from "./otel-attributes.js";
import { type SpanReading, UnstorableSpanValue } from "./span-screen.js";

/** A JSON object. */
export type JsonRecord = { [key: string]: AttributeValue };

/**
 * A span's attributes as the conventions read them: each key taken is gone, so that what no
 * convention read is what is left for `extra`.
 */
export class AttributeReader {
  constructor(
    private readonly attributes: Map<string, AttributeValue>,
    private readonly reading: SpanReading,
  ) {}

  /** The value of the first of `keys` present, taking only that one. */
  take(...keys: string[]): AttributeValue | undefined {
    const key = this.firstPresent(keys);
    if (key === undefined) return undefined;
    const value = this.attributes.get(key) as AttributeValue;
    this.attributes.delete(key);
    return value;
  }

  /**
   * {@link take}, with a text that holds a JSON object or array (as the LangSmith SDK, OpenInference
   * and Traceloop write inputs and outputs) parsed; any other text, or anything else, as it is.
   * The parsed value is screened (a span holding what cannot be stored is refused: it throws
   * {@link UnstorableSpanValue}), and an object keeps the text it came from, so that a run's
   * document is written as that text rather than serialized again.
   */
  json(...keys: string[]): AttributeValue | undefined {
    const key = this.firstPresent(keys);
    if (key === undefined) return undefined;
    const value = this.take(key);
    if (typeof value !== "string") return value;
    const first = value.trimStart()[0];
    if (first !== "{" && first !== "[") return value;
    let parsed: AttributeValue;
    try {
      parsed = JSON.parse(value) as AttributeValue;
    } catch {
      return value;
    }
    const problem = this.reading.screen.json(parsed, value);
    if (problem !== undefined) throw new UnstorableSpanValue(`attribute ${JSON.stringify(key)}:`, problem);
    if (typeof parsed === "object" && parsed !== null) this.reading.texts.remember(parsed, value);
    return parsed;
  }

  private firstPresent(keys: readonly string[]): string | undefined {
    for (const key of keys) if (this.attributes.has(key)) return key;
    return undefined;
  }

  /** Sets an attribute (one a rule read to decide, put back for extra). */
  put(key: string, value: AttributeValue): void {
    this.attributes.set(key, value);
  }

  /** {@link take} as text: a string as it is, another value as its JSON; undefined when absent. */
  text(...keys: string[]): string | undefined {
    const value = this.take(...keys);
    if (value === undefined || value === null) return undefined;
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  /** {@link take} as a non-negative integer count (numbers or decimal text), else undefined. */
  count(...keys: string[]): number | undefined {
    const value = this.take(...keys);
    const number = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
    return typeof number === "number" && Number.isInteger(number) && number >= 0 ? number : undefined;
  }

  /**
   * Every attribute under `prefix.` taken, as an object of the rest of each key (`prefix.a` → `a`),
   * or undefined when there is none.
   */
  takePrefixed(prefix: string): JsonRecord | undefined {
    let found: JsonRecord | undefined;
    for (const [key, value] of this.attributes) {
      if (!key.startsWith(`${prefix}.`)) continue;
      found ??= {};
      found[key.slice(prefix.length + 1)] = value;
      this.attributes.delete(key);
    }
    return found;
  }

  /**
   * The attributes of an indexed list (`prefix.0.role`, `prefix.0.content`, `prefix.1.role`, ...) as
   * a list of objects, dotted paths nested (`message.tool_calls.0.tool_call.id` becomes nested
   * objects and lists); undefined when there is none. Every key of the list is taken.
   */
  takeIndexed(prefix: string): AttributeValue[] | undefined {
    const items: JsonRecord[] = [];
    for (const [key, value] of this.attributes) {
      if (!key.startsWith(`${prefix}.`)) continue;
      const path = key.slice(prefix.length + 1).split(".");
      const index = Number(path[0]);
      if (!Number.isInteger(index) || index < 0 || path.length < 2) continue;
      items[index] ??= {};
      setPath(items[index] as JsonRecord, path.slice(1), value);
      this.attributes.delete(key);
    }
    if (items.length === 0) return undefined;
    return compact(items);
  }

  /** What no convention took. */
  rest(): JsonRecord {
    return Object.fromEntries(this.attributes);
  }
}

/** Sets `value` at `path` under `target`, creating objects along the way. */
function setPath(target: JsonRecord, path: readonly string[], value: AttributeValue): void {
  let at = target;
  for (let i = 0; i < path.length - 1; i++) {
    const step = path[i] as string;
    const next = at[step];
    if (typeof next !== "object" || next === null || Array.isArray(next)) at[step] = {};
    at = at[step] as JsonRecord;
  }
  at[path[path.length - 1] as string] = value;
}

/**
 * Lists out of objects whose keys are all indexes (`{"0": a, "1": b}` → `[a, b]`), at every level,
 * and the holes of a sparse list dropped.
 */
function compact(value: AttributeValue[]): AttributeValue[];
function compact(value: AttributeValue): AttributeValue;
function compact(value: AttributeValue): AttributeValue {
  if (Array.isArray(value)) return value.filter((item) => item !== undefined).map(compact);
  if (typeof value !== "object" || value === null) return value;
  const keys = Object.keys(value);
  if (keys.length > 0 && keys.every((key) => /^\d+$/.test(key))) {
    return keys
      .map(Number)
      .sort((a, b) => a - b)
      .map((key) => compact((value as JsonRecord)[key] as AttributeValue));
  }
  const out: JsonRecord = {};
  for (const key of keys) out[key] = compact(value[key] as AttributeValue);
  return out;
}

/** A value as a run's inputs or outputs object: an object as it is, anything else under `key`. */
export function asObject(value: AttributeValue, key: string): JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : { [key]: value };
}
