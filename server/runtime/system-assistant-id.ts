import { createHash } from "node:crypto";

/**
 * The UUID namespace the LangGraph servers derive system assistant ids from; using the same one
 * gives a graph's system assistant the same id here as there (graph `agent` →
 * `fe096781-5601-53d2-b2f6-0d3403f7e9ca`).
 */
const SYSTEM_ASSISTANT_NAMESPACE = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";

/** The id of a graph's system assistant: uuid5(graph_id, the LangGraph namespace). */
export function systemAssistantId(graphId: string): string {
  return uuidv5(graphId, SYSTEM_ASSISTANT_NAMESPACE);
}

/** A name-based UUID version 5 (RFC 9562 §5.5): SHA-1 of namespace bytes and name, version and variant set. */
export function uuidv5(name: string, namespace: string): string {
  const hash = createHash("sha1")
    .update(Buffer.from(namespace.replaceAll("-", ""), "hex"))
    .update(name, "utf8")
    .digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = 0x50 | ((bytes[6] ?? 0) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
