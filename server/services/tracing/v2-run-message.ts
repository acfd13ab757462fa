import type { MessageInitShape } from "@bufbuild/protobuf";
import type { RunSchema } from "../../../gen/agentplane/tracing/v2/run_pb.js";
import type { RunRow } from "../../store/run-query-store.js";
import { appPath, list, object, timestamp } from "./run-message.js";
import type { V2RunField } from "./v2-run-fields.js";

/** A v2 Run message to return. */
export type V2RunInit = MessageInitShape<typeof RunSchema>;

/**
 * The v2 Run message of a stored run with only `fields` set. A field the run has no value for stays
 * unset, so REST leaves it out. Status and run type are uppercase, costs are numbers, as the v2 API
 * has them.
 */
export function v2RunMessage(row: RunRow, fields: ReadonlySet<V2RunField>): V2RunInit {
  const all: { [K in V2RunField]: () => V2RunInit[keyof V2RunInit] } = {
    id: () => row.id,
    name: () => row.name,
    run_type: () => row.run_type.toUpperCase(),
    status: () => row.status.toUpperCase(),
    start_time: () => timestamp(row.start_time),
    end_time: () => timestamp(row.end_time),
    latency_seconds: () => latencySeconds(row.start_time, row.end_time),
    first_token_time: () => timestamp(row.first_token_time),
    error: () => row.error ?? undefined,
    extra: () => object(row.extra),
    metadata: () => object(metadataOf(row.extra)),
    events: () => list(row.events),
    inputs: () => object(row.inputs),
    outputs: () => object(row.outputs),
    manifest: () => object(row.serialized),
    parent_run_ids: () => list(row.parent_run_ids),
    project_id: () => row.session_id,
    trace_id: () => row.trace_id,
    thread_id: () => row.thread_id ?? undefined,
    dotted_order: () => row.dotted_order,
    is_root: () => row.is_root,
    reference_example_id: () => row.reference_example_id ?? undefined,
    total_tokens: () => decimal(row.total_tokens),
    prompt_tokens: () => decimal(row.prompt_tokens),
    completion_tokens: () => decimal(row.completion_tokens),
    total_cost: () => decimal(row.total_cost),
    prompt_cost: () => decimal(row.prompt_cost),
    completion_cost: () => decimal(row.completion_cost),
    tags: () => list(row.tags),
    app_path: () => appPath(row),
    is_in_dataset: () => row.reference_example_id !== null,
    feedback_stats: () => object(row.feedback_stats),
  };
  const message: Record<string, unknown> = {};
  for (const field of fields) {
    const value = all[field]();
    if (value !== undefined) message[camel(field)] = value;
  }
  return message as V2RunInit;
}

/** end − start in seconds, from ISO texts with microseconds; undefined while the run is pending. */
export function latencySeconds(start: string, end: string | null): number | undefined {
  if (end === null) return undefined;
  return (micros(end) - micros(start)) / 1e6;
}

/** A bigint or numeric column (decimal text) as a number; undefined for null. */
export function decimal(value: string | null): number | undefined {
  return value === null ? undefined : Number(value);
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

/** `run_type` → `runType`: the message's property names. */
function camel(name: string): string {
  return name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}
