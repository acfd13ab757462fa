import { Code, ConnectError } from "@connectrpc/connect";

/** Fields of a returned run, by their REST (proto) name. */
export const RUN_FIELDS = [
  "id",
  "name",
  "run_type",
  "start_time",
  "end_time",
  "status",
  "error",
  "inputs",
  "outputs",
  "extra",
  "events",
  "tags",
  "parent_run_id",
  "parent_run_ids",
  "trace_id",
  "dotted_order",
  "session_id",
  "reference_example_id",
  "feedback_stats",
  "total_tokens",
  "prompt_tokens",
  "completion_tokens",
  "total_cost",
  "prompt_cost",
  "completion_cost",
  "first_token_time",
  "app_path",
  "thread_id",
  "is_root",
  "trace_tier",
  "inserted_at",
  "serialized",
] as const;

/** A field of a returned run. */
export type RunField = (typeof RUN_FIELDS)[number];

/**
 * LangSmith `select` values that agentplane accepts but never fills (it does not store them, or
 * they are deprecated), so a client selecting them works and gets the field left out.
 */
const UNFILLED_FIELDS = new Set([
  "child_run_ids",
  "direct_child_run_ids",
  "execution_order",
  "inputs_preview",
  "outputs_preview",
  "manifest_id",
  "manifest_s3_id",
  "manifest",
  "inputs_s3_urls",
  "outputs_s3_urls",
  "s3_urls",
  "inputs_or_signed_url",
  "outputs_or_signed_url",
  "trace_min_start_time",
  "trace_max_start_time",
  "trace_min_max_start_time",
  "trace_first_received_at",
  "reference_dataset_id",
  "prompt_token_details",
  "completion_token_details",
  "prompt_cost_details",
  "completion_cost_details",
  "price_model_id",
  "messages",
  "last_queued_at",
  "in_dataset",
  "share_token",
  "ttl_seconds",
  "trace_upgrade",
]);

const KNOWN = new Set<string>(RUN_FIELDS);

/**
 * The fields a `select` asks for; every field when it is empty. INVALID_ARGUMENT names an unknown
 * value and lists the valid ones.
 */
export function selectedRunFields(select: readonly string[]): ReadonlySet<RunField> {
  if (select.length === 0) return KNOWN as ReadonlySet<RunField>;
  const fields = new Set<RunField>();
  for (const name of select) {
    if (KNOWN.has(name)) fields.add(name as RunField);
    else if (!UNFILLED_FIELDS.has(name)) {
      throw new ConnectError(
        `select: unknown run field "${name}"; valid fields: ${RUN_FIELDS.join(", ")}`,
        Code.InvalidArgument,
      );
    }
  }
  return fields;
}
