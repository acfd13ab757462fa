import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import type { StateSnapshot } from "@langchain/langgraph";
import { type ThreadState, ThreadStateSchema } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import { checkpointOf } from "../../runtime/checkpoint-config.js";
import { isObject, toPlainJson } from "../../runtime/plain-json.js";

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

/**
 * A task as the LangGraph servers show it: with its `path` and `result` (the writes of a task that
 * ran, else null); a subgraph's task points at the subgraph's namespace in `checkpoint`, or, read
 * with `subgraphs`, carries the subgraph's own state in `state` (its checkpoint is then null).
 */
function taskJson(task: StateSnapshot["tasks"][number]): JsonObject {
  const sub = task.state;
  const snapshot = sub !== undefined && "values" in sub && "next" in sub ? sub : undefined;
  return {
    id: task.id,
    name: task.name,
    path: toPlainJson(task.path ?? null),
    error: errorMessage(task.error),
    interrupts: interruptsOf(task),
    checkpoint: snapshot ? null : toPlainJson(sub && "configurable" in sub ? sub.configurable : null),
    state: snapshot ? threadStateJson(snapshot) : null,
    result: toPlainJson(task.result ?? null),
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
