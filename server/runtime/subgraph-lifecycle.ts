/**
 * The `lifecycle` stream mode of the run endpoints (SDK 1.15's `streamMode: "lifecycle"`): an event
 * `lifecycle|<namespace…>` when each subgraph starts and when it ends, `{event, namespace, error?}`.
 * A subgraph starts with the first chunk of its namespace (each namespace level is a subgraph run
 * by a task of the level above, named `<node>:<task id>`), and ends with that task's result in the
 * level above's `tasks` chunks: `failed` with its error, `interrupted` when it stopped on
 * interrupts, `completed` otherwise. The root graph's start and end are the run's own (`metadata`,
 * `end`), so it has none.
 */
import type { RunStreamEvent } from "./run-stream-event.js";

/** A `tasks` chunk that reports a task's outcome. */
interface TaskResult {
  id: string;
  name: string;
  error?: unknown;
  interrupts?: unknown[];
}

function isTaskResult(data: unknown): data is TaskResult {
  if (typeof data !== "object" || data === null) return false;
  const task = data as Partial<TaskResult> & { result?: unknown };
  return (
    typeof task.id === "string" && typeof task.name === "string" && ("result" in task || "error" in task)
  );
}

/** The event of a subgraph at `namespace` reaching `status`. */
function lifecycleEvent(namespace: readonly string[], status: string, error?: unknown): RunStreamEvent {
  return {
    event: `lifecycle|${namespace.join("|")}`,
    data: {
      event: status,
      namespace: [...namespace],
      ...(error !== undefined && error !== null ? { error: errorOf(error) } : {}),
    },
  };
}

function errorOf(error: unknown): { error: string; message: string } {
  if (typeof error === "object" && error !== null) {
    const e = error as { name?: unknown; message?: unknown };
    return { error: typeof e.name === "string" ? e.name : "Error", message: String(e.message ?? "") };
  }
  return { error: "Error", message: String(error) };
}

/** Follows one run's chunks (of every namespace, `tasks` among them) and reports its subgraphs. */
export function createSubgraphLifecycle() {
  const started = new Set<string>();
  const ended = new Set<string>();
  return {
    /** The lifecycle events a chunk of mode `mode` in namespace `ns` implies. */
    *observe(ns: readonly string[], mode: string, data: unknown): Generator<RunStreamEvent> {
      for (let depth = 1; depth <= ns.length; depth++) {
        const namespace = ns.slice(0, depth);
        const key = namespace.join("|");
        if (started.has(key)) continue;
        started.add(key);
        yield lifecycleEvent(namespace, "started");
      }
      if (mode !== "tasks" || !isTaskResult(data)) return;
      const child = [...ns, `${data.name}:${data.id}`];
      const key = child.join("|");
      if (!started.has(key) || ended.has(key)) return;
      ended.add(key);
      const interrupted = Array.isArray(data.interrupts) && data.interrupts.length > 0;
      const status = data.error ? "failed" : interrupted ? "interrupted" : "completed";
      yield lifecycleEvent(child, status, data.error);
    },

    /**
     * The ends of subgraphs still open when the run's stream is over: their task reported no
     * result, because the graph stopped inside them (`interrupt_before` / `interrupt_after` of a
     * subgraph) or failed there. Deepest first, as they unwind.
     */
    *finish(failed: boolean): Generator<RunStreamEvent> {
      const open = [...started].filter((key) => !ended.has(key)).sort((a, b) => b.length - a.length);
      for (const key of open) {
        ended.add(key);
        yield lifecycleEvent(key.split("|"), failed ? "failed" : "interrupted");
      }
    },
  };
}
