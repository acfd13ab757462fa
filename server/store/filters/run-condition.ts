import type { ColumnField, EntryFamily, EntryPart, SearchField } from "./filter-fields.js";

/** Comparison functions: `fn(field, value)`. */
export type ComparisonOperator = "eq" | "neq" | "gt" | "gte" | "lt" | "lte";

/** A value a checked condition compares with. Timestamps are normalised ISO strings. */
export type ConditionValue = string | number | boolean;

/** One condition on the key or the value of an entry (see {@link RunCondition} `entry`). */
export interface EntryCondition {
  readonly part: EntryPart;
  readonly operator: ComparisonOperator | "in";
  /** One value for a comparison, one or more for `in`. */
  readonly values: readonly ConditionValue[];
}

/**
 * A checked filter: every field resolved, every value converted and validated. What
 * {@link checkFilter} returns and {@link runFilterSql} turns into SQL. Evaluates to true or false
 * for every run (never SQL NULL), so `not` is an exact complement.
 */
export type RunCondition =
  | { readonly kind: "and" | "or"; readonly conditions: readonly RunCondition[] }
  | { readonly kind: "not"; readonly condition: RunCondition }
  | {
      readonly kind: "compare";
      readonly field: ColumnField;
      readonly operator: ComparisonOperator;
      /** null only with eq/neq on a nullable field: "has no value" / "has a value". */
      readonly value: ConditionValue | null;
    }
  | { readonly kind: "in"; readonly field: ColumnField; readonly values: readonly ConditionValue[] }
  | { readonly kind: "has-tag"; readonly tag: string }
  /** The run's metadata contains this JSON object (jsonb `@>`). */
  | { readonly kind: "has-metadata"; readonly json: string }
  /** Case-insensitive substring match of `text` in any of `fields`. */
  | { readonly kind: "search"; readonly fields: readonly SearchField[]; readonly text: string }
  /**
   * Some entry of the family (metadata key/value, top-level input or output key/value, feedback
   * item) meets every condition at once; with `negated`, no entry does.
   */
  | {
      readonly kind: "entry";
      readonly family: EntryFamily;
      readonly negated: boolean;
      readonly conditions: readonly EntryCondition[];
    };
