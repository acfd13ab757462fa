/**
 * The run filter language (`and(eq(run_type, "llm"), gt(latency, "5s"))`), shared by run queries
 * (`filter`, `trace_filter`, `tree_filter`) and bulk exports:
 *
 * ```ts
 * const condition = validateFilter(text); // throws FilterError { position, expected, detail }
 * await inWorkspaceScope(sql, [ws], (q) => q`select ... from runs as run
 *   where ${inWorkspace(q, "run", ws, [runFilterSql(q, condition, "run")])}`);
 * ```
 *
 * (`inWorkspace` in store/filters/sql-conditions.ts, `inWorkspaceScope` in store/tracing/workspace-scope.ts: the
 * workspace condition, and the row-level security beneath it.)
 */

export { FILTER_FIELDS, SEARCH_FIELDS } from "../../store/filters/filter-fields.js";
export type { ConditionValue, EntryCondition, RunCondition } from "../../store/filters/run-condition.js";
export { runFilterSql, type SqlFragment } from "../../store/filters/run-filter-sql.js";
export type { ComparisonOperator, FieldReference, FilterExpression, FilterLiteral } from "./filter-ast.js";
export { checkFilter, validateFilter } from "./filter-checker.js";
export { describeFilterError, FilterError } from "./filter-error.js";
export { type Token, tokenize } from "./filter-lexer.js";
export { FILTER_FUNCTIONS, parseFilter } from "./filter-parser.js";
