import type { MessageInitShape } from "@bufbuild/protobuf";
import type { RunSchema } from "../../../gen/agentplane/tracing/v2/run_pb.js";
import type { RunColumn, RunRow } from "../../store/tracing/run-query-store.js";
import { appPath, camel, decimal, list, object, timestamp } from "./run-message.js";
import type { V2RunField } from "./v2-run-fields.js";

/** A v2 Run message to return. */
export type V2RunInit = MessageInitShape<typeof RunSchema>;

/**
 * One field of a v2 Run: the row columns it reads, and its value for a stored run (undefined when
 * the run has no value for it).
 */
interface FieldSource {
  readonly reads: readonly RunColumn[];
  readonly value: (row: RunRow) => V2RunInit[keyof V2RunInit];
}

/**
 * Each field's columns and value. Module-level functions, made once: a table of closures built per
 * row cost more than the rest of the message (tsx names every closure it creates, one property
 * write each).
 */
const FIELD_SOURCES: { readonly [K in V2RunField]: FieldSource } = {
  id: { reads: ["id"], value: (row) => row.id },
  name: { reads: ["name"], value: (row) => row.name },
  run_type: { reads: ["run_type"], value: (row) => row.run_type.toUpperCase() },
  status: { reads: ["status"], value: (row) => row.status.toUpperCase() },
  start_time: { reads: ["start_time"], value: (row) => timestamp(row.start_time) },
  end_time: { reads: ["end_time"], value: (row) => timestamp(row.end_time) },
  latency_seconds: {
    reads: ["start_time", "end_time"],
    value: (row) => latencySeconds(row.start_time, row.end_time),
  },
  first_token_time: { reads: ["first_token_time"], value: (row) => timestamp(row.first_token_time) },
  error: { reads: ["error"], value: (row) => row.error ?? undefined },
  extra: { reads: ["extra"], value: (row) => object(row.extra) },
  metadata: { reads: ["extra"], value: (row) => object(metadataOf(row.extra)) },
  events: { reads: ["events"], value: (row) => list(row.events) },
  inputs: { reads: ["inputs"], value: (row) => object(row.inputs) },
  outputs: { reads: ["outputs"], value: (row) => object(row.outputs) },
  manifest: { reads: ["serialized"], value: (row) => object(row.serialized) },
  parent_run_ids: { reads: ["parent_run_ids"], value: (row) => list(row.parent_run_ids) },
  project_id: { reads: ["session_id"], value: (row) => row.session_id },
  trace_id: { reads: ["trace_id"], value: (row) => row.trace_id },
  thread_id: { reads: ["thread_id"], value: (row) => row.thread_id ?? undefined },
  dotted_order: { reads: ["dotted_order"], value: (row) => row.dotted_order },
  is_root: { reads: ["is_root"], value: (row) => row.is_root },
  reference_example_id: {
    reads: ["reference_example_id"],
    value: (row) => row.reference_example_id ?? undefined,
  },
  total_tokens: { reads: ["total_tokens"], value: (row) => decimal(row.total_tokens) },
  prompt_tokens: { reads: ["prompt_tokens"], value: (row) => decimal(row.prompt_tokens) },
  completion_tokens: { reads: ["completion_tokens"], value: (row) => decimal(row.completion_tokens) },
  total_cost: { reads: ["total_cost"], value: (row) => decimal(row.total_cost) },
  prompt_cost: { reads: ["prompt_cost"], value: (row) => decimal(row.prompt_cost) },
  completion_cost: { reads: ["completion_cost"], value: (row) => decimal(row.completion_cost) },
  tags: { reads: ["tags"], value: (row) => list(row.tags) },
  app_path: {
    reads: ["workspace_id", "session_id", "id", "trace_id", "start_time"],
    value: (row) => appPath(row),
  },
  is_in_dataset: { reads: ["reference_example_id"], value: (row) => row.reference_example_id !== null },
  feedback_stats: { reads: ["feedback_stats"], value: (row) => object(row.feedback_stats) },
};

/** Each field's property name in the message (`run_type` → `runType`), worked out once. */
const PROPERTY_NAMES = Object.fromEntries(
  Object.keys(FIELD_SOURCES).map((field) => [field, camel(field)]),
) as { readonly [K in V2RunField]: string };

/**
 * The encoder of v2 Run messages with only `fields` set, for every row of a page: the field list is
 * resolved once, then each row costs one call per field. A field the run has no value for stays
 * unset, so REST leaves it out. Status and run type are uppercase, costs are numbers, as the v2 API
 * has them.
 */
export function v2RunEncoder(fields: ReadonlySet<V2RunField>): (row: RunRow) => V2RunInit {
  const names = [...fields].map((field) => PROPERTY_NAMES[field]);
  const values = [...fields].map((field) => FIELD_SOURCES[field].value);
  return (row) => {
    const message: Record<string, unknown> = {};
    for (let i = 0; i < values.length; i++) {
      const value = values[i]!(row);
      if (value !== undefined) message[names[i]!] = value;
    }
    return message as V2RunInit;
  };
}

/**
 * The row columns the v2 Run messages of `fields` read: what a query for them selects (see
 * `RunQuery.columns`), so the row carries no column the response leaves out.
 */
export function v2RowColumns(fields: ReadonlySet<V2RunField>): ReadonlySet<RunColumn> {
  return new Set([...fields].flatMap((field) => FIELD_SOURCES[field].reads));
}

/** The v2 Run message of one stored run with only `fields` set (see {@link v2RunEncoder}). */
export function v2RunMessage(row: RunRow, fields: ReadonlySet<V2RunField>): V2RunInit {
  return v2RunEncoder(fields)(row);
}

/** end − start in seconds, from ISO texts with microseconds; undefined while the run is pending. */
export function latencySeconds(start: string, end: string | null): number | undefined {
  if (end === null) return undefined;
  return (micros(end) - micros(start)) / 1e6;
}

/** Microseconds since the epoch of ISO text with up to six fractional digits. */
function micros(iso: string): number {
  const dot = iso.indexOf(".");
  const whole = dot < 0 ? iso : `${iso.slice(0, dot)}Z`;
  const fraction = dot < 0 ? "" : iso.slice(dot + 1, -1);
  return Date.parse(whole) * 1000 + Number(fraction.padEnd(6, "0").slice(0, 6));
}

/** `extra.metadata` when it is an object. */
function metadataOf(extra: unknown): unknown {
  if (extra === null || typeof extra !== "object" || Array.isArray(extra)) return undefined;
  const metadata = (extra as Record<string, unknown>).metadata;
  return metadata !== null && typeof metadata === "object" && !Array.isArray(metadata) ? metadata : undefined;
}
