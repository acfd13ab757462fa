import { type CheckpointMetadata, EXCLUDED_METADATA_KEYS } from "@langchain/langgraph-checkpoint";

/**
 * Key prefixes never stored in checkpoint metadata, compared case-insensitively: the identity and
 * permissions of the authenticated user (`langgraph_auth_user`, `langgraph_auth_user_id`,
 * `langgraph_auth_permissions`), request headers forwarded into run config (`x-request-id`,
 * `x-api-key`, `x-tenant-id`, ...), and this server's own request-scoped fields (`agentplane_*`).
 */
const STRIPPED_PREFIXES = ["langgraph_auth_", "x-", "agentplane"];

/** Whole keys never stored, compared case-insensitively: request ids and raw request headers. */
const STRIPPED_KEYS = new Set([
  "request_id",
  "langgraph_request_id",
  "headers",
  "authorization",
  "cookie",
  "user-agent",
]);

/**
 * True when a metadata key must not be stored with a checkpoint. The rule: a key is dropped when,
 * lower-cased, it starts with `langgraph_auth_`, `x-` or `agentplane`, or equals one of
 * `request_id`, `langgraph_request_id`, `headers`, `authorization`, `cookie`, `user-agent`.
 */
export function isStrippedMetadataKey(key: string): boolean {
  const lower = key.toLowerCase();
  return STRIPPED_KEYS.has(lower) || STRIPPED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

function isPrimitive(value: unknown): value is string | number | boolean {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean";
}

/**
 * The metadata to store with a checkpoint: what LangGraph passed, plus the scalar (string, number,
 * boolean) entries of the run config's `metadata` that LangGraph did not set itself (so run ids,
 * assistant and graph ids recorded by the run executor appear in thread history, as on the
 * reference servers), minus LangGraph's per-task bookkeeping keys and every key
 * {@link isStrippedMetadataKey} rejects. Only top-level keys are inspected.
 */
export function checkpointMetadataToStore(
  metadata: CheckpointMetadata,
  configMetadata: Record<string, unknown> | undefined,
): CheckpointMetadata {
  const fromConfig = Object.entries(configMetadata ?? {}).filter(
    ([key, value]) => isPrimitive(value) && !EXCLUDED_METADATA_KEYS.has(key) && !key.startsWith("__"),
  );
  // Entries LangGraph set come last and win; fromEntries defines own properties, so no key (not
  // even "__proto__") can reach a prototype.
  return Object.fromEntries(
    [...fromConfig, ...Object.entries(metadata)].filter(([key]) => !isStrippedMetadataKey(key)),
  ) as CheckpointMetadata;
}
