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
import type { Queryable } from "./db.js";
import type { JsonTexts } from "./json-text.js";
import type { RunRow } from "./run-store.js";

/**
 * The columns of `runs` a write fills from its batch, with their types, in the order a run's array
 * holds them (see {@link runArrayText}).
 */
const BATCH_COLUMNS = [
  ["id", "uuid"],
  ["session_id", "uuid"],
  ["trace_id", "uuid"],
  ["parent_run_id", "uuid"],
  ["parent_run_ids", "uuid[]"],
  ["reference_example_id", "uuid"],
  ["name", "text"],
  ["run_type", "text"],
  ["start_time", "timestamptz"],
  ["end_time", "timestamptz"],
  ["is_root", "boolean"],
  ["dotted_order", "text"],
  ["trace_tier", "text"],
  ["inputs", "jsonb"],
  ["outputs", "jsonb"],
  ["error", "text"],
  ["extra", "jsonb"],
  ["events", "jsonb"],
  ["serialized", "jsonb"],
  ["tags", "text[]"],
  ["total_tokens", "bigint"],
  ["prompt_tokens", "bigint"],
  ["completion_tokens", "bigint"],
  ["total_cost", "numeric"],
  ["prompt_cost", "numeric"],
  ["completion_cost", "numeric"],
  ["first_token_time", "timestamptz"],
] as const;

/**
 * The select list that reads a run's array `e` by position. A document is taken as the jsonb it
 * is (a JSON null, which no stored document is, becomes SQL null); every other value as its text,
 * cast to the column's type by the type's own input (arrays arrive as Postgres array literals).
 */
const BY_POSITION = BATCH_COLUMNS.map(([column, type], i) =>
  type === "jsonb" ? `nullif(e -> ${i}, 'null') as ${column}` : `(e ->> ${i})::${type} as ${column}`,
).join(", ");

/** The column definition list of `jsonb_to_recordset` for runs as objects. */
const BY_NAME = BATCH_COLUMNS.map(([column, type]) => `${column} ${type}`).join(", ");

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

/** A nullable string or number as JSON. */
function json(value: string | number | null): string {
  return value === null ? "null" : JSON.stringify(value);
}

/**
 * One run as the JSON array {@link BY_POSITION} reads, its values in {@link BATCH_COLUMNS}' order.
 * Ids are validated UUIDs (the normaliser's and the project's), written without escaping; each
 * document is the text it arrived in where that was kept, so it is not serialized a second time.
 */
function runArrayText(r: RunRow, texts: JsonTexts): string {
  const document = (value: object | null) => (value === null ? "null" : texts.textOf(value));
  return (
    `["${r.id}","${r.projectId}","${r.traceId}",${r.parentRunId === null ? "null" : `"${r.parentRunId}"`},` +
    `"{${r.parentRunIds.join(",")}}",${r.referenceExampleId === null ? "null" : `"${r.referenceExampleId}"`},` +
    // A patch that creates its run before the post arrives: the SDK's default type, until the post says.
    `${JSON.stringify(r.name ?? "")},${JSON.stringify(r.runType ?? "chain")},` +
    `${JSON.stringify(r.startTime)},${json(r.endTime)},${r.isRoot},${JSON.stringify(r.dottedOrder)},` +
    `${json(r.traceTier)},${document(r.inputs)},${document(r.outputs)},${json(r.error)},` +
    `${document(r.extra)},${document(r.events)},${document(r.serialized)},` +
    `${JSON.stringify(arrayLiteral(r.tags))},${json(r.totalTokens)},${json(r.promptTokens)},` +
    `${json(r.completionTokens)},${json(r.totalCost)},${json(r.promptCost)},${json(r.completionCost)},` +
    `${json(r.firstTokenTime)}]`
  );
}

/** The batch as JSON text: an array of {@link runArrayText}. */
function batchArrayText(rows: readonly RunRow[], texts: JsonTexts): string {
  let text = "";
  for (const r of rows) text += `${text === "" ? "[" : ","}${runArrayText(r, texts)}`;
  return text === "" ? "[]" : `${text}]`;
}

/** The JSON documents of a run. */
const DOCUMENTS = ["inputs", "outputs", "extra", "events", "serialized"] as const;

/**
 * A run as an object keyed by column, for the encrypting serializer. Null columns are left out (a
 * missing key reads as null).
 */
function runObject(r: RunRow): Record<string, unknown> {
  const record: Record<string, unknown> = {
    id: r.id,
    session_id: r.projectId,
    trace_id: r.traceId,
    parent_run_ids: r.parentRunIds,
    name: r.name ?? "",
    run_type: r.runType ?? "chain",
    start_time: r.startTime,
    is_root: r.isRoot,
    dotted_order: r.dottedOrder,
    tags: r.tags,
  };
  if (r.parentRunId !== null) record.parent_run_id = r.parentRunId;
  if (r.referenceExampleId !== null) record.reference_example_id = r.referenceExampleId;
  if (r.endTime !== null) record.end_time = r.endTime;
  if (r.traceTier !== null) record.trace_tier = r.traceTier;
  if (r.error !== null) record.error = r.error;
  if (r.totalTokens !== null) record.total_tokens = r.totalTokens;
  if (r.promptTokens !== null) record.prompt_tokens = r.promptTokens;
  if (r.completionTokens !== null) record.completion_tokens = r.completionTokens;
  if (r.totalCost !== null) record.total_cost = r.totalCost;
  if (r.promptCost !== null) record.prompt_cost = r.promptCost;
  if (r.completionCost !== null) record.completion_cost = r.completionCost;
  if (r.firstTokenTime !== null) record.first_token_time = r.firstTokenTime;
  for (const key of DOCUMENTS) if (r[key] !== null) record[key] = r[key];
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
