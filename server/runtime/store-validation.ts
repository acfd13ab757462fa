import type { StoreFilterCondition, StoreFilterOperator } from "../store/agents/store-item-store.js";

/**
 * A store operation the caller got wrong: a bad namespace, key, filter, TTL or page. The message
 * says what to fix; the API answers it as INVALID_ARGUMENT (422).
 */
export class StoreInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StoreInputError";
  }
}

/**
 * Longest key, in UTF-8 bytes. With {@link MAX_NAMESPACE_BYTES} and {@link MAX_NAMESPACE_DEPTH}
 * it keeps a primary-key entry well under Postgres's B-tree limit of about 2,700 bytes, so a long
 * key is refused with a message instead of failing in the index.
 */
export const MAX_KEY_BYTES = 512;
/** Longest namespace, in UTF-8 bytes of its labels joined by "."; see {@link MAX_KEY_BYTES}. */
export const MAX_NAMESPACE_BYTES = 1024;
/** Most labels in a namespace; each costs index space beyond its bytes (see {@link MAX_KEY_BYTES}). */
export const MAX_NAMESPACE_DEPTH = 32;
/** Longest TTL, in minutes: 100 years, far beyond any use and far inside Postgres's timestamp range. */
export const MAX_TTL_MINUTES = 100 * 365.25 * 24 * 60;
/** Most conditions in one filter: each becomes an SQL clause, so the statement stays small. */
export const MAX_FILTER_CONDITIONS = 64;

const ORDERING: ReadonlySet<string> = new Set(["$gt", "$gte", "$lt", "$lte"]);
const OPERATORS: readonly StoreFilterOperator[] = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"];

const utf8Bytes = (text: string): number => Buffer.byteLength(text, "utf8");

/** How a namespace is used: an item's own namespace, or a pattern where "*" matches any label. */
type NamespaceUse = "item" | "pattern";

/**
 * Checks a namespace (`field` names it in the message). An item's namespace needs at least one
 * label; a prefix or suffix pattern may be empty. Every label must be a non-empty string without
 * "." or NUL, and the whole within {@link MAX_NAMESPACE_DEPTH} labels and {@link MAX_NAMESPACE_BYTES}.
 */
export function validateNamespace(namespace: readonly unknown[], field: string, use: NamespaceUse): string[] {
  if (!Array.isArray(namespace)) throw new StoreInputError(`${field} must be an array of labels`);
  if (use === "item" && namespace.length === 0)
    throw new StoreInputError(`${field} must have at least one label`);
  if (namespace.length > MAX_NAMESPACE_DEPTH)
    throw new StoreInputError(
      `${field} has ${namespace.length} labels; at most ${MAX_NAMESPACE_DEPTH} are allowed`,
    );
  namespace.forEach((label, i) => {
    const where = `${field} label ${i + 1}`;
    if (typeof label !== "string") throw new StoreInputError(`${where} must be a string`);
    if (label === "") throw new StoreInputError(`${where} is empty; namespace labels must be non-empty`);
    if (label.includes("."))
      throw new StoreInputError(
        `${where} ("${label}") contains "."; namespace labels cannot contain periods`,
      );
    if (label.includes("\u0000")) throw new StoreInputError(`${where} contains the NUL character`);
  });
  if (utf8Bytes(namespace.join(".")) > MAX_NAMESPACE_BYTES)
    throw new StoreInputError(
      `${field} is longer than ${MAX_NAMESPACE_BYTES} bytes (UTF-8, labels joined by ".")`,
    );
  return namespace as string[];
}

/** Checks an item key: a non-empty string of at most {@link MAX_KEY_BYTES} bytes without NUL. */
export function validateKey(key: unknown): string {
  if (typeof key !== "string") throw new StoreInputError("key must be a string");
  if (key === "") throw new StoreInputError("key must not be empty");
  if (key.includes("\u0000")) throw new StoreInputError("key contains the NUL character");
  if (utf8Bytes(key) > MAX_KEY_BYTES)
    throw new StoreInputError(`key is longer than ${MAX_KEY_BYTES} bytes (UTF-8)`);
  return key;
}

/** Checks a TTL in minutes: a positive number up to {@link MAX_TTL_MINUTES}. */
export function validateTtl(ttl: number, field: string): number {
  if (!(typeof ttl === "number" && Number.isFinite(ttl) && ttl > 0 && ttl <= MAX_TTL_MINUTES)) {
    throw new StoreInputError(
      `${field} must be a positive number of minutes, at most ${MAX_TTL_MINUTES} (100 years); got ${String(ttl)}`,
    );
  }
  return ttl;
}

/** Checks a non-negative integer such as a limit or an offset, within `[min, max]`. */
export function validateInteger(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max)
    throw new StoreInputError(`${field} must be an integer from ${min} to ${max}; got ${String(value)}`);
  return value;
}

/**
 * Turns a BaseStore filter into conditions: `{field: json}` means equal JSON; an object whose keys
 * all start with "$" is a set of operators ({@link OPERATORS}); any other object is compared as
 * JSON. Throws {@link StoreInputError} for an unknown operator or an operand of the wrong kind.
 */
export function parseStoreFilter(filter: Record<string, unknown> | undefined): StoreFilterCondition[] {
  if (filter === undefined || filter === null) return [];
  if (typeof filter !== "object" || Array.isArray(filter))
    throw new StoreInputError("filter must be a JSON object");
  const conditions: StoreFilterCondition[] = [];
  for (const [field, spec] of Object.entries(filter)) {
    if (field.includes("\u0000")) throw new StoreInputError("a filter field name contains the NUL character");
    if (!isOperatorObject(spec)) {
      conditions.push({ field, operator: "$eq", operand: spec });
      continue;
    }
    for (const [name, operand] of Object.entries(spec)) {
      conditions.push({ field, operator: checkOperator(field, name, operand), operand });
    }
  }
  if (conditions.length > MAX_FILTER_CONDITIONS)
    throw new StoreInputError(
      `filter has ${conditions.length} conditions; at most ${MAX_FILTER_CONDITIONS} are allowed`,
    );
  return conditions;
}

function isOperatorObject(spec: unknown): spec is Record<string, unknown> {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return false;
  const keys = Object.keys(spec);
  return keys.length > 0 && keys.every((k) => k.startsWith("$"));
}

function checkOperator(field: string, name: string, operand: unknown): StoreFilterOperator {
  const operator = OPERATORS.find((op) => op === name);
  const where = `filter field "${field}"`;
  if (!operator)
    throw new StoreInputError(`${where}: unknown operator ${name}; use one of ${OPERATORS.join(", ")}`);
  if (ORDERING.has(operator) && !["number", "string", "boolean"].includes(typeof operand))
    throw new StoreInputError(`${where}: ${operator} needs a number, a string or a boolean`);
  if ((operator === "$in" || operator === "$nin") && !Array.isArray(operand))
    throw new StoreInputError(`${where}: ${operator} needs an array`);
  if (operand === undefined) throw new StoreInputError(`${where}: ${operator} needs a value`);
  return operator;
}
