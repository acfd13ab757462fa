import type { StateSnapshot } from "@langchain/langgraph";
import type { JsonObject, JsonValue } from "../store/agents/thread-store.js";
import type { CompiledGraph } from "./graph-registry.js";
import { isObject, toPlainJson } from "./plain-json.js";

/** A thread's state after a run, as the thread row caches it. */
export interface ThreadStateAfterRun {
  values: JsonValue;
  /** Pending interrupts: task id → their `{id, value}`s. */
  interrupts: JsonObject;
  /** True when the graph stopped before its end (an interrupt, or interrupt_before/after). */
  stopped: boolean;
}

/** Reads the thread's latest state through the graph (its checkpointer). */
export async function threadStateAfterRun(
  graph: CompiledGraph,
  threadId: string,
): Promise<ThreadStateAfterRun> {
  const snapshot: StateSnapshot = await graph.getState({
    configurable: { thread_id: threadId, checkpoint_ns: "" },
  });
  const interrupts: JsonObject = {};
  for (const task of snapshot.tasks) {
    if (task.interrupts.length > 0) interrupts[task.id] = task.interrupts.map((i) => toPlainJson(i));
  }
  const values = toPlainJson(snapshot.values ?? {});
  return {
    values: isObject(values) || Array.isArray(values) ? values : {},
    interrupts,
    stopped: snapshot.next.length > 0 || Object.keys(interrupts).length > 0,
  };
}
