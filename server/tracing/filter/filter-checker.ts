import { isUuid } from "../../ids.js";
import {
  type ColumnField,
  type EntryField,
  FILTER_FIELDS,
  type FilterField,
  SEARCH_FIELDS,
  type SearchField,
} from "../../store/filters/filter-fields.js";
import type { ConditionValue, EntryCondition, RunCondition } from "../../store/filters/run-condition.js";
import type { ComparisonOperator, FieldReference, FilterExpression, FilterLiteral } from "./filter-ast.js";
import { FilterError } from "./filter-error.js";
import { DURATION_UNITS } from "./filter-lexer.js";
import { parseFilter } from "./filter-parser.js";
import { normalizeTimestamp } from "./timestamp-literal.js";

const FIELD_LIST = [...FILTER_FIELDS.keys()].join(", ");
const ORDERING = new Set<ComparisonOperator>(["gt", "gte", "lt", "lte"]);
const DURATION = /^\s*(-?(?:\d+(?:\.\d*)?|\.\d+))\s*([a-z]+)?\s*$/;

/**
 * Parses and checks filter text in one step: the entry point for an API parameter or a stored
 * export filter. Throws {@link FilterError}.
 */
export function validateFilter(text: string): RunCondition {
  return checkFilter(parseFilter(text));
}

/**
 * Checks a parsed filter against the run fields and converts it to a {@link RunCondition}: field
 * names must exist, functions must suit the field (`gt` only on times and numbers, `has` only on
 * tags and metadata), values must have the field's type (UUIDs, ISO timestamps, numbers, durations
 * for latency, the statuses). Key/value comparisons that sit directly in one `and(...)` describe the
 * same entry when the `and` holds a value comparison of that family (see README, "Run filters").
 * Throws {@link FilterError} at the offending node.
 */
export function checkFilter(expression: FilterExpression): RunCondition {
  switch (expression.kind) {
    case "and":
      return { kind: "and", conditions: checkAnd(expression.operands) };
    case "or":
      return { kind: "or", conditions: expression.operands.map(checkFilter) };
    case "not":
      return { kind: "not", condition: checkFilter(expression.operand) };
    case "has":
      return checkHas(expression.field, expression.value);
    case "search":
      return checkSearch(expression.field, expression.value);
    case "in": {
      const field = resolve(expression.field);
      if (field.kind === "entry") return standaloneEntry(field, entryOperand(expression, field));
      if (field.kind === "has") throw useHas(expression.field);
      if (expression.values.length === 0) throw emptyList(expression.listPosition);
      if (field.type === "boolean") throw notForIn(expression.field);
      return { kind: "in", field, values: expression.values.map((v) => columnValue(field, v)) };
    }
    case "comparison": {
      const field = resolve(expression.field);
      if (field.kind === "has") throw useHas(expression.field);
      if (field.kind === "entry") return standaloneEntry(field, entryOperand(expression, field));
      return checkComparison(field, expression.operator, expression.field, expression.value);
    }
  }
}

function checkAnd(operands: readonly FilterExpression[]): RunCondition[] {
  const conditions: RunCondition[] = [];
  const families = new Map<string, { field: EntryField; condition: EntryCondition }[]>();
  for (const operand of operands) {
    const entryField =
      operand.kind === "comparison" || operand.kind === "in" ? resolve(operand.field) : undefined;
    if (entryField?.kind !== "entry" || (operand.kind !== "comparison" && operand.kind !== "in")) {
      conditions.push(checkFilter(operand));
      continue;
    }
    const condition = entryOperand(operand, entryField);
    const group = families.get(entryField.family) ?? [];
    group.push({ field: entryField, condition });
    families.set(entryField.family, group);
  }
  for (const group of families.values()) {
    if (group.some((g) => g.field.part === "value")) {
      conditions.push({
        kind: "entry",
        family: group[0]!.field.family,
        negated: false,
        conditions: group.map((g) => g.condition),
      });
    } else {
      for (const g of group) conditions.push(standaloneEntry(g.field, g.condition));
    }
  }
  return conditions;
}

/** The entry condition of a comparison or `in` on a key/value field. */
function entryOperand(
  operand: Extract<FilterExpression, { kind: "comparison" | "in" }>,
  field: EntryField,
): EntryCondition {
  if (operand.kind === "comparison") return entryCondition(field, operand.operator, [operand.value]);
  if (operand.values.length === 0) throw emptyList(operand.listPosition);
  return entryCondition(field, "in", operand.values);
}

/** A key/value comparison on its own: `neq` means "no entry has it", the others "some entry has it". */
function standaloneEntry(field: EntryField, condition: EntryCondition): RunCondition {
  const negated = condition.operator === "neq";
  return {
    kind: "entry",
    family: field.family,
    negated,
    conditions: [negated ? { ...condition, operator: "eq" } : condition],
  };
}

function entryCondition(
  field: EntryField,
  operator: ComparisonOperator | "in",
  literals: readonly FilterLiteral[],
): EntryCondition {
  const numeric = field.family === "feedback" && field.part === "value";
  const ordering = operator !== "in" && ORDERING.has(operator);
  if (field.part === "key" && ordering) {
    throw new FilterError(
      literals[0]!.position,
      "eq, neq or in",
      `${operator} cannot compare ${field.name}; expected eq, neq or in`,
    );
  }
  const values = literals.map((literal): ConditionValue => {
    if (field.part === "key" || (!numeric && !ordering)) {
      if (literal.kind === "string") return literal.value;
      if (field.part === "value" && (literal.kind === "number" || literal.kind === "boolean"))
        return literal.value;
      throw wrongValue(literal, field.part === "key" ? "a quoted key name" : "a string, number or boolean");
    }
    if (literal.kind === "number") return literal.value;
    throw wrongValue(literal, "a number");
  });
  return { part: field.part, operator, values };
}

function checkComparison(
  field: ColumnField,
  operator: ComparisonOperator,
  reference: FieldReference,
  literal: FilterLiteral,
): RunCondition {
  if (
    ORDERING.has(operator) &&
    (field.type === "uuid" || field.type === "text" || field.type === "boolean")
  ) {
    throw new FilterError(
      reference.position,
      "a time or number field",
      `${operator} cannot compare ${field.name}; it works on times, numbers and latency (use eq, neq, in or search)`,
    );
  }
  if (literal.kind === "null") {
    if (!field.nullable) throw wrongValue(literal, `${expectedOf(field)} (${field.name} always has a value)`);
    if (operator !== "eq" && operator !== "neq") throw wrongValue(literal, expectedOf(field));
    return { kind: "compare", field, operator, value: null };
  }
  return { kind: "compare", field, operator, value: columnValue(field, literal) };
}

function columnValue(field: ColumnField, literal: FilterLiteral): ConditionValue {
  switch (field.type) {
    case "uuid":
      if (literal.kind === "string" && isUuid(literal.value)) return literal.value.toLowerCase();
      throw wrongValue(literal, expectedOf(field));
    case "text":
      if (literal.kind !== "string") throw wrongValue(literal, expectedOf(field));
      if (field.values && !field.values.includes(literal.value)) throw wrongValue(literal, expectedOf(field));
      return literal.value;
    case "timestamp": {
      const normalized = literal.kind === "string" ? normalizeTimestamp(literal.value) : undefined;
      if (normalized === undefined) throw wrongValue(literal, expectedOf(field));
      return normalized;
    }
    case "number":
      if (literal.kind === "number") return literal.value;
      throw wrongValue(literal, expectedOf(field));
    case "latency": {
      if (literal.kind === "number" || literal.kind === "duration") return literal.value;
      const seconds = literal.kind === "string" ? parseDuration(literal.value) : undefined;
      if (seconds === undefined) throw wrongValue(literal, expectedOf(field));
      return seconds;
    }
    case "boolean":
      if (literal.kind === "boolean") return literal.value;
      throw wrongValue(literal, expectedOf(field));
  }
}

function checkHas(reference: FieldReference, literal: FilterLiteral): RunCondition {
  const field = resolve(reference);
  if (field.kind !== "has") {
    throw new FilterError(
      reference.position,
      "tags or metadata",
      `has works on tags and metadata, not ${field.name}`,
    );
  }
  if (literal.kind !== "string") {
    throw wrongValue(literal, field.name === "tags" ? "a quoted tag" : "a quoted JSON object");
  }
  if (field.name === "tags") return { kind: "has-tag", tag: literal.value };
  let parsed: unknown;
  try {
    parsed = JSON.parse(literal.value);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw wrongValue(literal, `a quoted JSON object such as '{"key": "value"}'`);
  }
  return { kind: "has-metadata", json: JSON.stringify(parsed) };
}

function checkSearch(reference: FieldReference | undefined, literal: FilterLiteral): RunCondition {
  let fields: readonly SearchField[] = SEARCH_FIELDS;
  if (reference) {
    const named = SEARCH_FIELDS.find((f) => f === reference.name);
    if (!named) {
      throw new FilterError(
        reference.position,
        `one of ${SEARCH_FIELDS.join(", ")}`,
        `search works on ${SEARCH_FIELDS.join(", ")}, not ${JSON.stringify(reference.name)}`,
      );
    }
    fields = [named];
  }
  if (literal.kind !== "string" || literal.value === "")
    throw wrongValue(literal, "a non-empty quoted string");
  return { kind: "search", fields, text: literal.value };
}

function resolve(reference: FieldReference): FilterField {
  const field = FILTER_FIELDS.get(reference.name);
  if (field) return field;
  throw new FilterError(
    reference.position,
    `one of ${FIELD_LIST}`,
    `unknown field "${reference.name}"; expected one of ${FIELD_LIST}`,
  );
}

/** Seconds of a duration string: `5s`, `1.5m`, `200ms`, `2h`, `1d`, or a plain number of seconds. */
function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match) return undefined;
  const factor = match[2] === undefined ? 1 : DURATION_UNITS[match[2]];
  return factor === undefined ? undefined : Number(match[1]) * factor;
}

function expectedOf(field: ColumnField): string {
  switch (field.type) {
    case "uuid":
      return "a quoted UUID";
    case "text":
      return field.values ? `one of ${field.values.map((v) => `"${v}"`).join(", ")}` : "a quoted string";
    case "timestamp":
      return 'a quoted ISO 8601 time such as "2024-07-15T12:34:56Z"';
    case "number":
      return "a number";
    case "latency":
      return 'a number of seconds or a duration such as "5s" or "1.5m"';
    case "boolean":
      return "true or false";
  }
}

function wrongValue(literal: FilterLiteral, expected: string): FilterError {
  const found = literal.kind === "null" ? "null" : JSON.stringify(literal.value);
  return new FilterError(literal.position, expected, `expected ${expected}, found ${found}`);
}

function useHas(reference: FieldReference): FilterError {
  return new FilterError(
    reference.position,
    `has(${reference.name}, ...)`,
    `${reference.name} is matched with has(${reference.name}, ...)`,
  );
}

function notForIn(reference: FieldReference): FilterError {
  return new FilterError(
    reference.position,
    "a field that is not boolean",
    `in cannot be used on ${reference.name}; use eq`,
  );
}

function emptyList(position: number): FilterError {
  return new FilterError(position, "at least one value in the list");
}
