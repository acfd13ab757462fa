import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { RunnableConfig } from "@langchain/core/runnables";
import { isObject, toPlainJson } from "./plain-json.js";

/** A checkpoint as the Agent Server's JSON shows it. */
export interface CheckpointJson {
  [key: string]: JsonValue;
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  checkpoint_map: JsonObject | null;
}

/** The checkpoint a runnable config points at, or null when it names none. */
export function checkpointOf(config: RunnableConfig | undefined): CheckpointJson | null {
  const c = config?.configurable;
  if (!c || typeof c.thread_id !== "string" || typeof c.checkpoint_id !== "string" || !c.checkpoint_id)
    return null;
  return checkpointJson(c, c.checkpoint_id);
}

/**
 * The checkpoint a task's config points at (a subgraph's namespace, whose checkpoint id is not
 * known before the subgraph runs), as the LangGraph servers show it in debug and task events:
 * `checkpoint_id` null when the config names none. Null when the config names no thread.
 */
export function taskCheckpointOf(config: unknown):
  | (Omit<CheckpointJson, "checkpoint_id"> & {
      checkpoint_id: string | null;
    })
  | null {
  const c = (config as RunnableConfig | undefined)?.configurable;
  if (!c || typeof c.thread_id !== "string") return null;
  return checkpointJson(c, typeof c.checkpoint_id === "string" && c.checkpoint_id ? c.checkpoint_id : null);
}

function checkpointJson<Id extends string | null>(c: Record<string, unknown>, id: Id) {
  const map = toPlainJson(c.checkpoint_map);
  return {
    thread_id: c.thread_id as string,
    checkpoint_ns: typeof c.checkpoint_ns === "string" ? c.checkpoint_ns : "",
    checkpoint_id: id,
    checkpoint_map: isObject(map) ? map : null,
  };
}
