import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { StateSnapshot } from "@langchain/langgraph";
import { type ThreadState, ThreadStateSchema } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import { isObject, toPlainJson } from "../../runtime/plain-json.js";

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
  const map = toPlainJson(c.checkpoint_map);
  return {
    thread_id: c.thread_id,
    checkpoint_ns: typeof c.checkpoint_ns === "string" ? c.checkpoint_ns : "",
    checkpoint_id: c.checkpoint_id,
    checkpoint_map: isObject(map) ? map : null,
  };
}

/** The interrupts of a snapshot's tasks, as `{id, value}` objects. */
function interruptsOf(task: StateSnapshot["tasks"][number]): JsonValue[] {
  return task.interrupts.map((i) => toPlainJson(i));
}

function errorMessage(error: unknown): JsonValue {
  if (error === undefined || error === null) return null;
  if (error instanceof Error) return error.message;
  if (isObject(toPlainJson(error))) {
    const message = (error as { message?: unknown }).message;
    if (typeof message === "string") return message;
  }
  return typeof error === "string" ? error : JSON.stringify(toPlainJson(error));
}

function taskJson(task: StateSnapshot["tasks"][number]): JsonObject {
  const sub = task.state;
  const snapshot = sub !== undefined && "values" in sub && "next" in sub ? sub : undefined;
  return {
    id: task.id,
    name: task.name,
    error: errorMessage(task.error),
    interrupts: interruptsOf(task),
    checkpoint: snapshot
      ? checkpointOf(snapshot.config)
      : toPlainJson(sub && "configurable" in sub ? sub.configurable : null),
    state: snapshot ? threadStateJson(snapshot) : null,
  };
}

/** A snapshot as ThreadState JSON (the REST shape). */
export function threadStateJson(snapshot: StateSnapshot): JsonObject {
  const metadata = toPlainJson(snapshot.metadata);
  return {
    values: toPlainJson(snapshot.values ?? {}),
    next: [...snapshot.next],
    tasks: snapshot.tasks.map(taskJson),
    checkpoint: checkpointOf(snapshot.config),
    metadata: isObject(metadata) ? metadata : {},
    created_at: snapshot.createdAt ?? null,
    parent_checkpoint: checkpointOf(snapshot.parentConfig),
    interrupts: snapshot.tasks.flatMap(interruptsOf),
  };
}

/** A snapshot as a ThreadState message. */
export function threadStateView(snapshot: StateSnapshot): ThreadState {
  return fromJson(ThreadStateSchema, threadStateJson(snapshot));
}

/** The state of a thread that has none yet: no graph, or never ran. */
export function emptyThreadState(): ThreadState {
  return fromJson(ThreadStateSchema, {
    values: {},
    next: [],
    tasks: [],
    checkpoint: null,
    metadata: {},
    created_at: null,
    parent_checkpoint: null,
    interrupts: [],
  });
}

/** Pending interrupts of a snapshot by task id (tasks without interrupts left out). */
export function interruptsByTask(snapshot: StateSnapshot): JsonObject {
  const out: JsonObject = {};
  for (const task of snapshot.tasks) {
    if (task.interrupts.length > 0) out[task.id] = interruptsOf(task);
  }
  return out;
}
