import { fromJson, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ThreadTraceSchema } from "../../../gen/agentplane/tracing/v2/thread_service_pb.js";
import type { RunRow } from "../../store/tracing/run-query-store.js";
import type { TraceTotals } from "../../store/tracing/trace-totals-store.js";
import { invalid } from "../request-validation.js";
import { decimal, timestamp } from "./run-message.js";
import { latencySeconds } from "./v2-run-message.js";

/** `ThreadTraceSelectField` values agentplane fills, by the ThreadTrace field each sets. */
const TRACE_FIELDS = {
  THREAD_ID: "thread_id",
  TRACE_ID: "trace_id",
  NAME: "name",
  START_TIME: "start_time",
  END_TIME: "end_time",
  LATENCY: "latency",
  FIRST_TOKEN_TIME: "first_token_time",
  INPUTS: "inputs",
  OUTPUTS: "outputs",
  ERROR: "error",
  TOTAL_TOKENS: "total_tokens",
  PROMPT_TOKENS: "prompt_tokens",
  COMPLETION_TOKENS: "completion_tokens",
  TOTAL_COST: "total_cost",
  PROMPT_COST: "prompt_cost",
  COMPLETION_COST: "completion_cost",
} as const;

/**
 * Values for what agentplane does not store or has no defined meaning for (the legacy numeric
 * `op` code of a run type, text previews, per-category details): accepted and left out.
 */
const UNFILLED_TRACE_FIELDS = new Set([
  "OP",
  "INPUTS_PREVIEW",
  "OUTPUTS_PREVIEW",
  "ERROR_PREVIEW",
  "PROMPT_TOKEN_DETAILS",
  "COMPLETION_TOKEN_DETAILS",
  "PROMPT_COST_DETAILS",
  "COMPLETION_COST_DETAILS",
]);

/** A field of a thread trace that agentplane fills. */
export type ThreadTraceField = (typeof TRACE_FIELDS)[keyof typeof TRACE_FIELDS];

/** The `SingleThreadStatsSelectField` values agentplane fills, by the ThreadStats property each sets. */
const STATS_FIELDS = {
  TURNS: "turns",
  FIRST_START_TIME: "firstStartTime",
  LAST_START_TIME: "lastStartTime",
  LAST_END_TIME: "lastEndTime",
  LATENCY_P50: "latencyP50Seconds",
  LATENCY_P99: "latencyP99Seconds",
  TOTAL_TOKENS: "totalTokens",
  PROMPT_TOKENS: "promptTokens",
  COMPLETION_TOKENS: "completionTokens",
  TOTAL_COST: "totalCost",
  PROMPT_COST: "promptCost",
  COMPLETION_COST: "completionCost",
} as const;

/** Stats values for what agentplane does not store (per-category details, thread feedback). */
const UNFILLED_STATS = new Set([
  "PROMPT_TOKEN_DETAILS",
  "COMPLETION_TOKEN_DETAILS",
  "PROMPT_COST_DETAILS",
  "COMPLETION_COST_DETAILS",
  "FEEDBACK_STATS",
]);

/** A ThreadStats property agentplane fills. */
export type ThreadStatsField = (typeof STATS_FIELDS)[keyof typeof STATS_FIELDS];

/** A thread trace message to return. */
export type ThreadTraceInit = MessageInitShape<typeof ThreadTraceSchema>;

/**
 * The thread-trace fields `selects` asks for (`trace_id` always); only `trace_id` when empty.
 * Matched without regard to case; an unknown value is INVALID_ARGUMENT listing the valid ones.
 */
export function selectedThreadTraceFields(selects: readonly string[]): ReadonlySet<ThreadTraceField> {
  const fields = new Set<ThreadTraceField>(["trace_id"]);
  for (const [i, value] of selects.entries()) {
    const field = (TRACE_FIELDS as Record<string, ThreadTraceField>)[value.toUpperCase()];
    if (field) fields.add(field);
    else if (!UNFILLED_TRACE_FIELDS.has(value.toUpperCase())) {
      const valid = [...Object.keys(TRACE_FIELDS), ...UNFILLED_TRACE_FIELDS].join(", ");
      throw invalid(
        `selects[${i}]: unknown thread trace field ${JSON.stringify(value)}; valid fields: ${valid}`,
      );
    }
  }
  return fields;
}

/**
 * The stats `selects` asks for: at least one is required, as LangSmith. Matched without regard to
 * case; an unknown value is INVALID_ARGUMENT listing the valid ones.
 */
export function selectedStats(selects: readonly string[]): ReadonlySet<ThreadStatsField> {
  const valid = [...Object.keys(STATS_FIELDS), ...UNFILLED_STATS].join(", ");
  if (selects.length === 0) throw invalid(`selects is required: at least one of ${valid}`);
  const fields = new Set<ThreadStatsField>();
  for (const [i, value] of selects.entries()) {
    const field = (STATS_FIELDS as Record<string, ThreadStatsField>)[value.toUpperCase()];
    if (field) fields.add(field);
    else if (!UNFILLED_STATS.has(value.toUpperCase())) {
      throw invalid(
        `selects[${i}]: unknown thread stats field ${JSON.stringify(value)}; valid fields: ${valid}`,
      );
    }
  }
  return fields;
}

/**
 * The ThreadTrace of a root run with only `fields` set: the root's own fields, and the trace's
 * tokens, costs and first-token time from its totals (see findTraceTotals).
 */
export function threadTraceMessage(
  row: RunRow,
  totals: TraceTotals | undefined,
  fields: ReadonlySet<ThreadTraceField>,
): ThreadTraceInit {
  const all: { [K in ThreadTraceField]: () => unknown } = {
    trace_id: () => row.trace_id,
    thread_id: () => row.thread_id ?? undefined,
    name: () => row.name,
    start_time: () => timestamp(row.start_time),
    end_time: () => timestamp(row.end_time),
    latency: () => latencySeconds(row.start_time, row.end_time),
    first_token_time: () => timestamp(totals?.first_token_time ?? null),
    inputs: () => jsonValue(row.inputs),
    outputs: () => jsonValue(row.outputs),
    error: () => row.error ?? undefined,
    total_tokens: () => decimal(totals?.total_tokens ?? null),
    prompt_tokens: () => decimal(totals?.prompt_tokens ?? null),
    completion_tokens: () => decimal(totals?.completion_tokens ?? null),
    total_cost: () => decimal(totals?.total_cost ?? null),
    prompt_cost: () => decimal(totals?.prompt_cost ?? null),
    completion_cost: () => decimal(totals?.completion_cost ?? null),
  };
  const message: Record<string, unknown> = {};
  for (const field of fields) {
    const value = all[field]();
    if (value !== undefined) message[field.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
  }
  return message as ThreadTraceInit;
}

/** A JSON column as a google.protobuf.Value; undefined for SQL null. */
function jsonValue(value: unknown): Value | undefined {
  return value === null || value === undefined ? undefined : fromJson(ValueSchema, value as JsonValue);
}
