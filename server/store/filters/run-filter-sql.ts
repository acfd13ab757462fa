import type postgres from "postgres";
import type { Queryable } from "../db.js";
import type { ColumnField, EntryFamily, SearchField } from "./filter-fields.js";
import type { ComparisonOperator, ConditionValue, EntryCondition, RunCondition } from "./run-condition.js";

/** A piece of SQL with its parameters, to nest in a porsager query (`sql\`... where ${fragment}\``). */
export type SqlFragment = postgres.Fragment;

/** Table aliases the renderer uses inside its own subqueries; the caller's alias must differ. */
const INNER_ALIASES = new Set(["filter_entry", "filter_feedback"]);
const ALIAS = /^[a-z_][a-z0-9_]*$/;

/**
 * The SQL boolean expression of a checked filter over the `runs` row aliased `alias` in the
 * caller's query, as one parenthesised expression, so that however it is combined (`... and
 * ${runFilterSql(sql, condition, "run")}`) an `or` inside it cannot escape. Combine it with the
 * workspace through `inWorkspace` (store/filters/sql-conditions.ts). Every value is a bound parameter;
 * identifiers come from a fixed table. Never SQL NULL: true or false for every row. Feedback
 * conditions read `run_feedback` rows of the same workspace and run.
 */
export function runFilterSql(sql: Queryable, condition: RunCondition, alias: string): SqlFragment {
  if (!ALIAS.test(alias) || INNER_ALIASES.has(alias)) throw new Error(`invalid runs alias ${alias}`);
  const run = sql(alias);
  const col = (name: string): SqlFragment => sql`${run}.${sql(name)}`;

  const columnOf = (field: ColumnField): SqlFragment => {
    switch (field.name) {
      case "latency":
        return sql`extract(epoch from (${col("end_time")} - ${col("start_time")}))`;
      case "thread_id":
        return sql`coalesce(${col("extra")} -> 'metadata' ->> 'thread_id', ${col("extra")} -> 'metadata' ->> 'session_id', ${col("extra")} -> 'metadata' ->> 'conversation_id')`;
      default:
        return col(field.name);
    }
  };

  const param = (field: ColumnField, value: ConditionValue): SqlFragment => {
    switch (field.type) {
      case "uuid":
        return sql`${String(value)}::uuid`;
      case "text":
        return sql`${String(value)}::text`;
      case "timestamp":
        return sql`${String(value)}::text::timestamptz`;
      case "number":
      case "latency":
        return sql`${String(value)}::text::numeric`;
      case "boolean":
        return sql`${value === true}::boolean`;
    }
  };

  const arrayParam = (field: ColumnField, values: readonly ConditionValue[]): SqlFragment => {
    const texts = values.map(String);
    switch (field.type) {
      case "uuid":
        return sql`${texts}::text[]::uuid[]`;
      case "number":
      case "latency":
        return sql`${texts}::text[]::numeric[]`;
      case "timestamp":
        return sql`${texts}::text[]::timestamptz[]`;
      default:
        return sql`${texts}::text[]`;
    }
  };

  /** `coalesce(..., false)` around a comparison that is NULL when the column is. */
  const definite = (field: ColumnField, expression: SqlFragment): SqlFragment =>
    field.nullable ? sql`coalesce(${expression}, false)` : expression;

  const compare = (field: ColumnField, operator: ComparisonOperator, value: ConditionValue | null) => {
    const x = columnOf(field);
    if (value === null) return operator === "eq" ? sql`${x} is null` : sql`${x} is not null`;
    const v = param(field, value);
    if (operator === "neq") return sql`${x} is distinct from ${v}`;
    return definite(field, ordered(sql, x, operator, v));
  };

  const render = (c: RunCondition): SqlFragment => {
    switch (c.kind) {
      case "and":
        return join(sql, c.conditions.map(render), "and");
      case "or":
        return join(sql, c.conditions.map(render), "or");
      case "not":
        return sql`not (${render(c.condition)})`;
      case "compare":
        return compare(c.field, c.operator, c.value);
      case "in":
        return definite(c.field, sql`${columnOf(c.field)} = any(${arrayParam(c.field, c.values)})`);
      case "has-tag":
        return sql`${col("tags")} @> ${[c.tag]}::text[]`;
      case "has-metadata":
        return sql`coalesce(${col("extra")} -> 'metadata' @> ${c.json}::text::jsonb, false)`;
      case "search":
        return join(
          sql,
          c.fields.map((f) => searchOne(sql, col, f, likePattern(c.text))),
          "or",
        );
      case "entry": {
        const exists = entryExists(sql, col, c.family, c.conditions);
        return c.negated ? sql`not ${exists}` : exists;
      }
    }
  };

  return sql`(${render(condition)})`;
}

function ordered(
  sql: Queryable,
  x: SqlFragment,
  operator: Exclude<ComparisonOperator, "neq">,
  v: SqlFragment,
): SqlFragment {
  switch (operator) {
    case "eq":
      return sql`${x} = ${v}`;
    case "gt":
      return sql`${x} > ${v}`;
    case "gte":
      return sql`${x} >= ${v}`;
    case "lt":
      return sql`${x} < ${v}`;
    case "lte":
      return sql`${x} <= ${v}`;
  }
}

function join(sql: Queryable, parts: readonly SqlFragment[], operator: "and" | "or"): SqlFragment {
  const wrapped = parts.map((p) => sql`(${p})`);
  return wrapped.reduce((acc, p) => (operator === "and" ? sql`${acc} and ${p}` : sql`${acc} or ${p}`));
}

/** `%text%` with LIKE's wildcards and escape character (backslash) escaped: a literal substring. */
function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function searchOne(
  sql: Queryable,
  col: (name: string) => SqlFragment,
  field: SearchField,
  pattern: string,
): SqlFragment {
  switch (field) {
    case "name":
      return sql`${col("name")} ilike ${pattern}`;
    case "error":
      return sql`coalesce(${col("error")} ilike ${pattern}, false)`;
    case "inputs":
      return sql`coalesce(${col("inputs")}::text ilike ${pattern}, false)`;
    case "outputs":
      return sql`coalesce(${col("outputs")}::text ilike ${pattern}, false)`;
  }
}

/** `exists (...)` over the entries of a family, each condition on the same entry. */
function entryExists(
  sql: Queryable,
  col: (name: string) => SqlFragment,
  family: EntryFamily,
  conditions: readonly EntryCondition[],
): SqlFragment {
  if (family === "feedback") {
    const fb = sql("filter_feedback");
    const where = join(
      sql,
      conditions.map((c) =>
        c.part === "key" ? keyCondition(sql, sql`${fb}.key`, c) : scoreCondition(sql, sql`${fb}.score`, c),
      ),
      "and",
    );
    return sql`exists (select 1 from run_feedback as ${fb} where ${fb}.workspace_id = ${col("workspace_id")} and ${fb}.run_id = ${col("id")} and ${where})`;
  }
  const source =
    family === "metadata"
      ? sql`${col("extra")} -> 'metadata'`
      : family === "input"
        ? col("inputs")
        : col("outputs");
  const key = namedKey(conditions);
  if (key !== undefined) {
    // One named key: its entry is `source -> key` (NULL when the source is no object or lacks the
    // key), so the other conditions test that value directly. The same truth as the `exists` over
    // every entry below, and it skips unnesting the object for each row (most of the cost of a
    // page filtered on metadata).
    const value = sql`(${source} -> ${key}::text)`;
    const rest = conditions.map((c) =>
      c.part === "key" ? keyCondition(sql, sql`${key}::text`, c) : jsonValueCondition(sql, value, c),
    );
    return sql`coalesce(${join(sql, [sql`${value} is not null`, ...rest], "and")}, false)`;
  }
  const entry = sql("filter_entry");
  const where = join(
    sql,
    conditions.map((c) =>
      c.part === "key"
        ? keyCondition(sql, sql`${entry}.key`, c)
        : jsonValueCondition(sql, sql`${entry}.value`, c),
    ),
    "and",
  );
  return sql`exists (select 1 from jsonb_each(case when jsonb_typeof(${source}) = 'object' then ${source} else '{}'::jsonb end) as ${entry} (key, value) where ${where})`;
}

/** The key an entry must have when some condition names exactly one (`eq` or a one-value `in`). */
function namedKey(conditions: readonly EntryCondition[]): string | undefined {
  const named = conditions.find(
    (c) => c.part === "key" && (c.operator === "eq" || c.operator === "in") && c.values.length === 1,
  );
  return named === undefined ? undefined : String(named.values[0]);
}

function keyCondition(sql: Queryable, key: SqlFragment, c: EntryCondition): SqlFragment {
  const texts = c.values.map(String);
  if (c.operator === "in") return sql`${key} = any(${texts}::text[])`;
  return c.operator === "neq" ? sql`${key} <> ${texts[0]!}::text` : sql`${key} = ${texts[0]!}::text`;
}

function scoreCondition(sql: Queryable, score: SqlFragment, c: EntryCondition): SqlFragment {
  const texts = c.values.map(String);
  if (c.operator === "in") return sql`coalesce(${score} = any(${texts}::text[]::float8[]), false)`;
  const v = sql`${texts[0]!}::text::float8`;
  if (c.operator === "neq") return sql`${score} is distinct from ${v}`;
  return sql`coalesce(${ordered(sql, score, c.operator, v)}, false)`;
}

/**
 * A condition on a JSON value: strings and booleans match the text of a scalar value (`"5"`
 * matches both `"5"` and `5`); numbers match numeric values numerically; gt/gte/lt/lte compare
 * numeric values only. Objects and arrays never match.
 */
function jsonValueCondition(sql: Queryable, value: SqlFragment, c: EntryCondition): SqlFragment {
  const equals = (v: ConditionValue): SqlFragment =>
    typeof v === "number"
      ? sql`(case when jsonb_typeof(${value}) = 'number' then (${value})::numeric = ${String(v)}::text::numeric else false end)`
      : sql`(jsonb_typeof(${value}) in ('string', 'number', 'boolean') and (${value} #>> '{}') = ${String(v)}::text)`;
  if (c.operator === "in") return join(sql, c.values.map(equals), "or");
  const v = c.values[0]!;
  if (c.operator === "eq") return equals(v);
  if (c.operator === "neq") return sql`not ${equals(v)}`;
  const n = sql`${String(v)}::text::numeric`;
  const x = sql`(${value})::numeric`;
  return sql`(case when jsonb_typeof(${value}) = 'number' then ${ordered(sql, x, c.operator, n)} else false end)`;
}
