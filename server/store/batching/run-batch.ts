/**
 * How a write sends its batch of runs to Postgres: one `jsonb` parameter for the whole batch (one
 * round trip, one parse, whatever the batch size), read back as the rows the upserts select from,
 * under the alias `excluded`.
 *
 * Where the documents are sent as the text they arrived in (the pool does not encrypt JSON), each run
 * is a JSON array of its column values in {@link BATCH_COLUMNS}' order, read by position. Objects
 * keyed by column name, read by `jsonb_to_recordset`, made Postgres parse every key, sort each run's
 * keys (jsonb keeps an object's keys sorted) and look each column up by name. In bench:ingest's
 * shape, 100-run batches written in turn both ways on one database, the upsert read by position
 * took 0.87-0.93 of the backend CPU of the named form (median per batch, 60 batches each, five
 * runs), and the batch text is a tenth shorter.
 * Where the pool encrypts JSON, its serializer, which seals allowlisted keys of the whole parameter,
 * still receives the runs as objects keyed by column, as before.
 */
import type { Queryable } from "../db.js";
import type { JsonTexts } from "../json-text.js";
import type { RunRow } from "../tracing/run-row.js";

/** A column of `runs` a write fills from its batch: its name, its type, and a run's value of it. */
interface BatchColumn {
  readonly column: string;
  readonly type:
    | "uuid"
    | "uuid[]"
    | "text"
    | "text[]"
    | "timestamptz"
    | "boolean"
    | "jsonb"
    | "bigint"
    | "numeric";
  readonly value: (r: RunRow) => string | number | boolean | readonly string[] | object | null;
}

/**
 * The columns of a batch, in the order a run's array holds them (see {@link runArrayText}); the
 * object form names them (see {@link runObject}).
 */
const BATCH_COLUMNS: readonly BatchColumn[] = [
  { column: "id", type: "uuid", value: (r) => r.id },
  { column: "session_id", type: "uuid", value: (r) => r.projectId },
  { column: "trace_id", type: "uuid", value: (r) => r.traceId },
  { column: "parent_run_id", type: "uuid", value: (r) => r.parentRunId },
  { column: "parent_run_ids", type: "uuid[]", value: (r) => r.parentRunIds },
  { column: "reference_example_id", type: "uuid", value: (r) => r.referenceExampleId },
  { column: "name", type: "text", value: (r) => r.name ?? "" },
  // A patch that creates its run before the post arrives: the SDK's default type, until the post says.
  { column: "run_type", type: "text", value: (r) => r.runType ?? "chain" },
  { column: "start_time", type: "timestamptz", value: (r) => r.startTime },
  { column: "end_time", type: "timestamptz", value: (r) => r.endTime },
  { column: "is_root", type: "boolean", value: (r) => r.isRoot },
  { column: "dotted_order", type: "text", value: (r) => r.dottedOrder },
  { column: "trace_tier", type: "text", value: (r) => r.traceTier },
  { column: "inputs", type: "jsonb", value: (r) => r.inputs },
  { column: "outputs", type: "jsonb", value: (r) => r.outputs },
  { column: "error", type: "text", value: (r) => r.error },
  { column: "extra", type: "jsonb", value: (r) => r.extra },
  { column: "events", type: "jsonb", value: (r) => r.events },
  { column: "serialized", type: "jsonb", value: (r) => r.serialized },
  { column: "tags", type: "text[]", value: (r) => r.tags },
  { column: "total_tokens", type: "bigint", value: (r) => r.totalTokens },
  { column: "prompt_tokens", type: "bigint", value: (r) => r.promptTokens },
  { column: "completion_tokens", type: "bigint", value: (r) => r.completionTokens },
  { column: "total_cost", type: "numeric", value: (r) => r.totalCost },
  { column: "prompt_cost", type: "numeric", value: (r) => r.promptCost },
  { column: "completion_cost", type: "numeric", value: (r) => r.completionCost },
  { column: "first_token_time", type: "timestamptz", value: (r) => r.firstTokenTime },
];

/**
 * The select list that reads a run's array `e` by position. A document is taken as the jsonb it
 * is (a JSON null, which no stored document is, becomes SQL null); every other value as its text,
 * cast to the column's type by the type's own input (arrays arrive as Postgres array literals).
 */
const BY_POSITION = BATCH_COLUMNS.map(({ column, type }, i) =>
  type === "jsonb" ? `nullif(e -> ${i}, 'null') as ${column}` : `(e ->> ${i})::${type} as ${column}`,
).join(", ");

/** The column definition list of `jsonb_to_recordset` for runs as objects. */
const BY_NAME = BATCH_COLUMNS.map(({ column, type }) => `${column} ${type}`).join(", ");

/**
 * `items` as a Postgres array literal: each element double-quoted, its backslashes and double
 * quotes escaped, so that any string (a comma, a brace, `NULL`, an empty string) is one element.
 */
function arrayLiteral(items: readonly string[]): string {
  let literal = "";
  for (const item of items) {
    literal += `${literal === "" ? "" : ","}"${item.replace(/[\\"]/g, "\\$&")}"`;
  }
  return `{${literal}}`;
}

/** A value of a run's array as JSON: how each column type writes its value (null as `null`). */
type PositionalWriter = (value: never, texts: JsonTexts) => string;

/**
 * How each column type writes a value into a run's array: a document as the text it arrived in
 * where that was kept (so it is not serialized a second time), an array as its Postgres literal in
 * a JSON string, ids (validated UUIDs, the normaliser's and the project's) without escaping,
 * anything else as JSON.
 */
const POSITIONAL: Record<BatchColumn["type"], PositionalWriter> = {
  uuid: (id: string) => `"${id}"`,
  "uuid[]": (ids: readonly string[]) => `"{${ids.join(",")}}"`,
  text: (text: string) => JSON.stringify(text),
  "text[]": (items: readonly string[]) => JSON.stringify(arrayLiteral(items)),
  timestamptz: (time: string) => JSON.stringify(time),
  boolean: (flag: boolean) => (flag ? "true" : "false"),
  jsonb: (document: object, texts) => texts.textOf(document),
  bigint: (count: number) => JSON.stringify(count),
  numeric: (amount: string) => JSON.stringify(amount),
};

/** Each column's writer of a run's value, in {@link BATCH_COLUMNS}' order, chosen once. */
const POSITIONAL_COLUMNS = BATCH_COLUMNS.map(({ type, value }) => {
  const write = POSITIONAL[type];
  return (r: RunRow, texts: JsonTexts) => {
    const v = value(r);
    return v === null ? "null" : write(v as never, texts);
  };
});

/** One run as the JSON array {@link BY_POSITION} reads, its values in {@link BATCH_COLUMNS}' order. */
function runArrayText(r: RunRow, texts: JsonTexts): string {
  let text = "[";
  for (let i = 0; i < POSITIONAL_COLUMNS.length; i++) {
    text += `${i === 0 ? "" : ","}${(POSITIONAL_COLUMNS[i] as (typeof POSITIONAL_COLUMNS)[number])(r, texts)}`;
  }
  return `${text}]`;
}

/** The batch as JSON text: an array of {@link runArrayText}. */
function batchArrayText(rows: readonly RunRow[], texts: JsonTexts): string {
  let text = "";
  for (const r of rows) text += `${text === "" ? "[" : ","}${runArrayText(r, texts)}`;
  return text === "" ? "[]" : `${text}]`;
}

/**
 * A run as an object keyed by column, for the encrypting serializer. Null columns are left out (a
 * missing key reads as null).
 */
function runObject(r: RunRow): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const column of BATCH_COLUMNS) {
    const value = column.value(r);
    if (value !== null) record[column.column] = value;
  }
  return record;
}

/**
 * How a write sends its batch: with `sourceTexts`, as text, the documents as the text they arrived
 * in where it was kept, which is only right when the pool does not encrypt JSON (its serializer,
 * which encrypts, is then skipped); without, as a JSON parameter through the pool's serializer.
 */
export interface RunWriteOptions {
  sourceTexts?: JsonTexts;
}

/** The batch's rows as a FROM item aliased `excluded`, with one column per {@link BATCH_COLUMNS}. */
export function batchRows(q: Queryable, rows: readonly RunRow[], { sourceTexts }: RunWriteOptions) {
  if (sourceTexts) {
    // As text cast through text, so that the driver sends it as it is rather than as a JSON string.
    return q`(select ${q.unsafe(BY_POSITION)}
      from jsonb_array_elements(${batchArrayText(rows, sourceTexts)}::text::jsonb) as e) as excluded`;
  }
  return q`jsonb_to_recordset(${q.json(rows.map(runObject) as never)}::jsonb) as excluded (${q.unsafe(BY_NAME)})`;
}
