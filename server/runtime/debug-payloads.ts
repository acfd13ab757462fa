import { isBaseMessage } from "@langchain/core/messages";
import { checkpointOf, taskCheckpointOf } from "./checkpoint-config.js";

/**
 * The payloads of the library's `debug`, `checkpoints` and `tasks` stream modes as the LangGraph
 * servers stream them. A checkpoint payload (`{config, parentConfig, values, metadata, next,
 * tasks}`) gains `checkpoint` and `parent_checkpoint` (the checkpoints its configs point at, as in
 * the thread state), its `parentConfig` is named `parent_config`, and both configs lose what only
 * the library uses (`__pregel_*` keys, callbacks, the abort signal). A task whose `state` is a
 * subgraph's config shows it as `checkpoint` instead, as the thread state does.
 */
export function debugChunkPayload(mode: string, data: unknown): unknown {
  if (!isRecord(data)) return data;
  if (mode === "checkpoints") return checkpointPayload(data);
  if (mode === "tasks") return taskPayload(data);
  if (mode !== "debug") return data;
  const payload = data.payload;
  if (!isRecord(payload)) return data;
  return {
    ...data,
    payload: data.type === "checkpoint" ? checkpointPayload(payload) : taskPayload(payload),
  };
}

function checkpointPayload(payload: Record<string, unknown>): Record<string, unknown> {
  const { parentConfig, config, tasks, ...rest } = payload;
  return {
    ...rest,
    config: publicConfig(config),
    parent_config: publicConfig(parentConfig),
    checkpoint: checkpointOf(config as never),
    parent_checkpoint: checkpointOf(parentConfig as never),
    tasks: Array.isArray(tasks) ? tasks.map((task) => (isRecord(task) ? taskPayload(task) : task)) : tasks,
  };
}

function taskPayload(task: Record<string, unknown>): Record<string, unknown> {
  const checkpoint = taskCheckpointOf(task.state);
  if (!checkpoint) return task;
  const { state: _state, ...rest } = task;
  return { ...rest, checkpoint };
}

/** A config without the library's own keys; undefined and null stay as they are. */
function publicConfig(config: unknown): unknown {
  if (!isRecord(config)) return config;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (key === "callbacks" || key === "signal" || key.startsWith("__")) continue;
    out[key] = key === "configurable" && isRecord(value) ? withoutInternalKeys(value) : value;
  }
  return out;
}

function withoutInternalKeys(configurable: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(configurable).filter(([key]) => !key.startsWith("__")));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !isBaseMessage(value);
}
