import type { ComparisonOperator } from "../../store/filters/run-condition.js";

/**
 * The syntax tree of a filter expression, as {@link parseFilter} builds it: typed by function, with
 * the position of every node. Field names are not checked here; {@link checkFilter} does that.
 */

/** Comparison functions: `fn(field, value)`; declared with the checked condition the store compiles. */
export type { ComparisonOperator };

/** A literal value, at its position. */
export type FilterLiteral =
  | { readonly kind: "string"; readonly value: string; readonly position: number }
  | { readonly kind: "number"; readonly value: number; readonly position: number }
  | { readonly kind: "boolean"; readonly value: boolean; readonly position: number }
  | { readonly kind: "null"; readonly value: null; readonly position: number }
  /** A bare duration such as `5s` or `1.5m`, in seconds. Quoted durations are strings until checked. */
  | { readonly kind: "duration"; readonly value: number; readonly position: number };

/** A field name, at its position. */
export interface FieldReference {
  readonly name: string;
  readonly position: number;
}

/** Any node of a filter expression. */
export type FilterExpression =
  | {
      readonly kind: "comparison";
      readonly operator: ComparisonOperator;
      readonly field: FieldReference;
      readonly value: FilterLiteral;
      readonly position: number;
    }
  | {
      readonly kind: "in";
      readonly field: FieldReference;
      readonly values: readonly FilterLiteral[];
      /** Where the list's `[` is. */
      readonly listPosition: number;
      readonly position: number;
    }
  | {
      readonly kind: "has";
      readonly field: FieldReference;
      readonly value: FilterLiteral;
      readonly position: number;
    }
  | {
      readonly kind: "search";
      /** Absent for `search("text")`, which searches every searchable field. */
      readonly field: FieldReference | undefined;
      readonly value: FilterLiteral;
      readonly position: number;
    }
  | {
      readonly kind: "and" | "or";
      readonly operands: readonly FilterExpression[];
      readonly position: number;
    }
  | { readonly kind: "not"; readonly operand: FilterExpression; readonly position: number };
