import { create, fromJson, type JsonObject, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ListValueSchema, type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import type { RunSchema } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import type { RunRow } from "../../store/run-query-store.js";
import type { RunField } from "./run-fields.js";

/** A Run message to return. */
export type RunInit = MessageInitShape<typeof RunSchema>;

/**
 * The Run message of a stored run with only `fields` set. A field the run has no value for stays
 * unset, so REST leaves it out.
 */
export function runMessage(row: RunRow, fields: ReadonlySet<RunField>): RunInit {
  const all: { [K in RunField]: () => RunInit[keyof RunInit] } = {
    id: () => row.id,
    name: () => row.name,
    run_type: () => row.run_type,
    start_time: () => timestamp(row.start_time),
    end_time: () => timestamp(row.end_time),
    status: () => row.status,
    error: () => row.error ?? undefined,
    inputs: () => object(row.inputs),
    outputs: () => object(row.outputs),
    extra: () => object(row.extra),
    events: () => list(row.events),
    tags: () => list(row.tags),
    parent_run_id: () => row.parent_run_id ?? undefined,
    parent_run_ids: () => list(row.parent_run_ids),
    trace_id: () => row.trace_id,
    dotted_order: () => row.dotted_order,
    session_id: () => row.session_id,
    reference_example_id: () => row.reference_example_id ?? undefined,
    feedback_stats: () => object(row.feedback_stats),
    total_tokens: () => count(row.total_tokens),
    prompt_tokens: () => count(row.prompt_tokens),
    completion_tokens: () => count(row.completion_tokens),
    total_cost: () => row.total_cost ?? undefined,
    prompt_cost: () => row.prompt_cost ?? undefined,
    completion_cost: () => row.completion_cost ?? undefined,
    first_token_time: () => timestamp(row.first_token_time),
    app_path: () => appPath(row),
    thread_id: () => row.thread_id ?? undefined,
    is_root: () => row.is_root,
    trace_tier: () => row.trace_tier ?? undefined,
    inserted_at: () => timestamp(row.received_at),
    serialized: () => object(row.serialized),
  };
  const message: Record<string, unknown> = {};
  for (const field of fields) {
    const value = all[field]();
    if (value !== undefined) message[camel(field)] = value;
  }
  return message as RunInit;
}

/** Where the run would be shown in a LangSmith-style UI: `/o/<workspace>/projects/p/<project>/r/<run>?...`. */
export function appPath(row: RunRow): string {
  return `/o/${row.workspace_id}/projects/p/${row.session_id}/r/${row.id}?trace_id=${row.trace_id}&start_time=${row.start_time}`;
}

/** `run_type` → `runType`: the message's property names. */
function camel(name: string): string {
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

function count(value: string | null): number | undefined {
  return value === null ? undefined : Number(value);
}
