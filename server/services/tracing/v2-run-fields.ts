import type { RunJsonColumn } from "../../store/tracing/run-query-store.js";
import { invalid } from "../request-validation.js";

/**
 * The v2 `RunSelectField` values agentplane fills, by the Run field each one sets (the field's
 * proto name). Any other value of the SDK's enum is accepted and left absent: {@link UNFILLED}.
 */
const FILLED = {
  ID: "id",
  NAME: "name",
  RUN_TYPE: "run_type",
  STATUS: "status",
  START_TIME: "start_time",
  END_TIME: "end_time",
  LATENCY_SECONDS: "latency_seconds",
  FIRST_TOKEN_TIME: "first_token_time",
  ERROR: "error",
  EXTRA: "extra",
  METADATA: "metadata",
  EVENTS: "events",
  INPUTS: "inputs",
  OUTPUTS: "outputs",
  MANIFEST: "manifest",
  PARENT_RUN_IDS: "parent_run_ids",
  PROJECT_ID: "project_id",
  TRACE_ID: "trace_id",
  THREAD_ID: "thread_id",
  DOTTED_ORDER: "dotted_order",
  IS_ROOT: "is_root",
  REFERENCE_EXAMPLE_ID: "reference_example_id",
  TOTAL_TOKENS: "total_tokens",
  PROMPT_TOKENS: "prompt_tokens",
  COMPLETION_TOKENS: "completion_tokens",
  TOTAL_COST: "total_cost",
  PROMPT_COST: "prompt_cost",
  COMPLETION_COST: "completion_cost",
  TAGS: "tags",
  APP_PATH: "app_path",
  IS_IN_DATASET: "is_in_dataset",
  FEEDBACK_STATS: "feedback_stats",
} as const;

/**
 * `RunSelectField` values for what agentplane does not store (text previews, per-category token
 * and cost details, price models, datasets, attachments as signed URLs, annotation queues,
 * sharing, thread evaluations): a client selecting them works and gets the field left out.
 */
const UNFILLED = new Set([
  "ERROR_PREVIEW",
  "INPUTS_PREVIEW",
  "OUTPUTS_PREVIEW",
  "REFERENCE_DATASET_ID",
  "PROMPT_TOKEN_DETAILS",
  "COMPLETION_TOKEN_DETAILS",
  "PROMPT_COST_DETAILS",
  "COMPLETION_COST_DETAILS",
  "PRICE_MODEL_ID",
  "ATTACHMENTS",
  "THREAD_EVALUATION_TIME",
  "LAST_QUEUED_AT",
  "SHARE_URL",
]);

/** A field of a v2 run that agentplane fills. */
export type V2RunField = (typeof FILLED)[keyof typeof FILLED];

/** The large JSON columns each field needs read. */
const JSON_COLUMNS: Partial<Record<V2RunField, RunJsonColumn>> = {
  extra: "extra",
  metadata: "extra",
  events: "events",
  inputs: "inputs",
  outputs: "outputs",
  manifest: "serialized",
  feedback_stats: "feedback_stats",
};

/** Every select value the v2 API knows, for error messages. */
const KNOWN = [...Object.keys(FILLED), ...UNFILLED].join(", ");

/**
 * The fields `selects` asks for: only `id` when empty, as LangSmith. Values are matched without
 * regard to case; an unknown one is INVALID_ARGUMENT naming `parameter` and the valid values.
 */
export function selectedV2Fields(selects: readonly string[], parameter = "selects"): ReadonlySet<V2RunField> {
  if (selects.length === 0) return new Set<V2RunField>(["id"]);
  const fields = new Set<V2RunField>();
  for (const [i, value] of selects.entries()) {
    const name = value.toUpperCase();
    const field = (FILLED as Record<string, V2RunField>)[name];
    if (field) fields.add(field);
    else if (!UNFILLED.has(name)) {
      throw invalid(`${parameter}[${i}]: unknown run field ${JSON.stringify(value)}; valid fields: ${KNOWN}`);
    }
  }
  return fields;
}

/** The large JSON columns that `fields` need read. */
export function jsonColumnsOf(fields: ReadonlySet<V2RunField>): ReadonlySet<RunJsonColumn> {
  const columns = new Set<RunJsonColumn>();
  for (const field of fields) {
    const column = JSON_COLUMNS[field];
    if (column) columns.add(column);
  }
  return columns;
}
