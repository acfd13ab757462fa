import { create, fromJson, type JsonObject, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ListValueSchema, type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import type { RunSchema } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import type { RunRow } from "../../store/tracing/run-query-store.js";
import type { RunField } from "./run-fields.js";

/** A Run message to return. */
export type RunInit = MessageInitShape<typeof RunSchema>;

/**
 * How each field's value is read from a stored run, at module level: a table of closures built per
 * row cost more than the rest of building the message (the server runs under tsx, which names every
 * closure with a property write).
 */
const FIELD_VALUES: { readonly [K in RunField]: (row: RunRow) => RunInit[keyof RunInit] } = {
  id: (row) => row.id,
  name: (row) => row.name,
  run_type: (row) => row.run_type,
  start_time: (row) => timestamp(row.start_time),
  end_time: (row) => timestamp(row.end_time),
  status: (row) => row.status,
  error: (row) => row.error ?? undefined,
  inputs: (row) => object(row.inputs),
  outputs: (row) => object(row.outputs),
  extra: (row) => object(row.extra),
  events: (row) => list(row.events),
  tags: (row) => list(row.tags),
  parent_run_id: (row) => row.parent_run_id ?? undefined,
  parent_run_ids: (row) => list(row.parent_run_ids),
  trace_id: (row) => row.trace_id,
  dotted_order: (row) => row.dotted_order,
  session_id: (row) => row.session_id,
  reference_example_id: (row) => row.reference_example_id ?? undefined,
  feedback_stats: (row) => object(row.feedback_stats),
  total_tokens: (row) => decimal(row.total_tokens),
  prompt_tokens: (row) => decimal(row.prompt_tokens),
  completion_tokens: (row) => decimal(row.completion_tokens),
  total_cost: (row) => row.total_cost ?? undefined,
  prompt_cost: (row) => row.prompt_cost ?? undefined,
  completion_cost: (row) => row.completion_cost ?? undefined,
  first_token_time: (row) => timestamp(row.first_token_time),
  app_path: (row) => appPath(row),
  thread_id: (row) => row.thread_id ?? undefined,
  is_root: (row) => row.is_root,
  trace_tier: (row) => row.trace_tier ?? undefined,
  inserted_at: (row) => timestamp(row.received_at),
  serialized: (row) => object(row.serialized),
};

/** Message property name of each field (`run_type` → `runType`), worked out once. */
const MESSAGE_NAMES = new Map<RunField, string>(
  (Object.keys(FIELD_VALUES) as RunField[]).map((field) => [field, camel(field)]),
);

/**
 * The Run message of a stored run with only `fields` set. A field the run has no value for stays
 * unset, so REST leaves it out.
 */
export function runMessage(row: RunRow, fields: ReadonlySet<RunField>): RunInit {
  const message: Record<string, unknown> = {};
  for (const field of fields) {
    const value = FIELD_VALUES[field](row);
    if (value !== undefined) message[MESSAGE_NAMES.get(field) as string] = value;
  }
  return message as RunInit;
}

/** Where the run would be shown in a LangSmith-style UI: `/o/<workspace>/projects/p/<project>/r/<run>?...`. */
export function appPath(row: RunRow): string {
  return `/o/${row.workspace_id}/projects/p/${row.session_id}/r/${row.id}?trace_id=${row.trace_id}&start_time=${row.start_time}`;
}

/** `run_type` → `runType`: the message's property names. */
export function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** A Timestamp of ISO text with up to microseconds, exactly (a Date would drop the microseconds). */
export function timestamp(iso: string | null): Timestamp | undefined {
  if (iso === null) return undefined;
  const dot = iso.indexOf(".");
  const whole = dot < 0 ? iso : `${iso.slice(0, dot)}Z`;
  const fraction = dot < 0 ? "" : iso.slice(dot + 1, -1);
  return create(TimestampSchema, {
    seconds: BigInt(Math.floor(Date.parse(whole) / 1000)),
    nanos: Number(fraction.padEnd(9, "0")),
  });
}

/** A JSON object column; any other JSON (a bare array or value) is wrapped as `{"value": ...}`. */
export function object(value: unknown): JsonObject | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "object" && !Array.isArray(value)) return value as JsonObject;
  return { value: value as JsonValue };
}

/** A JSON array column as a ListValue; undefined for anything else. */
export function list(value: unknown) {
  if (!Array.isArray(value)) return undefined;
  return fromJson(ListValueSchema, value as JsonValue[]);
}

/** A bigint or numeric column (decimal text) as a number; undefined for null. */
export function decimal(value: string | null): number | undefined {
  return value === null ? undefined : Number(value);
}
