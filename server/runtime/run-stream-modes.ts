import { isBaseMessage } from "@langchain/core/messages";
import { isCheckpointEnvelope } from "@langchain/langgraph";
import { debugChunkPayload } from "./debug-payloads.js";
import { toPlainJson } from "./plain-json.js";
import type { RunStreamEvent } from "./run-stream-event.js";
import { createSubgraphLifecycle } from "./subgraph-lifecycle.js";

/** The stream modes a run accepts, as the LangGraph API names them. */
export const STREAM_MODES = [
  "values",
  "updates",
  "messages",
  "messages-tuple",
  "events",
  "debug",
  "tasks",
  "checkpoints",
  "custom",
  "tools",
  "lifecycle",
] as const;

/** One of {@link STREAM_MODES}. */
export type StreamMode = (typeof STREAM_MODES)[number];

/**
 * The modes to ask `@langchain/langgraph` for, given the modes a client asked for: `messages-tuple`
 * is the library's `messages`; the API's `messages` builds `messages/complete` from `values`;
 * `values` is always asked for, since the last root `values` chunk is the run's output; `events`
 * and the API's `messages` come from the callback events, not from a mode.
 */
export function libraryModes(modes: readonly StreamMode[]): string[] {
  const lib = new Set<string>(["values"]);
  for (const mode of modes) {
    if (mode === "messages-tuple") lib.add("messages");
    // Subgraphs' ends are read from their tasks' results (subgraph-lifecycle.ts).
    else if (mode === "lifecycle") lib.add("tasks");
    else if (mode !== "events" && mode !== "messages") lib.add(mode);
  }
  return [...lib];
}

/** Whether the library must stream subgraphs: asked for, or needed to see their lifecycle. */
export function streamsSubgraphs(modes: readonly StreamMode[], subgraphs: boolean): boolean {
  return subgraphs || modes.includes("lifecycle");
}

/**
 * Whether a run must go through the callback event stream (`streamEvents`): the API's `events` are
 * those callback events, and its `messages` (partial message chunks) are built from them;
 * `messages-tuple` stays there too, so chat models stream and their chunks are serialised as the
 * LangGraph servers serialise them. Every other mode is one of the library's own stream modes.
 */
export function needsCallbackEvents(modes: readonly StreamMode[]): boolean {
  return modes.some((mode) => mode === "events" || mode === "messages" || mode === "messages-tuple");
}

/**
 * Maps the chunks of one run to API events. `chunk` takes the library's `[namespace, mode, data]`
 * tuples; `callbackEvent` the `streamEvents` v2 events other than the root's chunks (for `events`
 * and `messages/*`). Subgraph chunks become `<mode>|<ns…>` events when `subgraphs` is set, and are
 * dropped otherwise. `output()` is the last root `values` chunk: the run's result.
 */
export function createStreamMapper(modes: readonly StreamMode[], subgraphs: boolean) {
  const wanted = new Set<string>(modes);
  // The JS server's streams carry checkpoint pointers when its library streams `values` (asked
  // for, or needed for `messages`) and the full checkpoints are not asked for.
  const pointers =
    subgraphs && (wanted.has("values") || wanted.has("messages")) && !wanted.has("checkpoints");
  const partial = new Map<string, { concat?: (other: unknown) => unknown }>();
  const completed = new Set<string>();
  const lifecycle = wanted.has("lifecycle") ? createSubgraphLifecycle() : undefined;
  let output: unknown;
  let hasOutput = false;

  const named = (mode: string, ns: readonly string[]) => (ns.length > 0 ? `${mode}|${ns.join("|")}` : mode);

  function* completeMessages(values: unknown): Generator<RunStreamEvent> {
    if (typeof values !== "object" || values === null || isBaseMessage(values)) return;
    const raw = (values as { messages?: unknown }).messages;
    const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
    const fresh = list.filter((m) => {
      const id = (m as { id?: unknown })?.id;
      if (typeof id !== "string" || completed.has(id)) return false;
      completed.add(id);
      return true;
    });
    if (fresh.length > 0) yield { event: "messages/complete", data: fresh };
  }

  return {
    *chunk(ns: readonly string[], mode: string, data: unknown): Generator<RunStreamEvent> {
      const root = ns.length === 0;
      if (mode === "values" && root) {
        output = data;
        hasOutput = true;
      }
      if (lifecycle) yield* lifecycle.observe(ns, mode, data);
      if (!root && !subgraphs) return;
      if (mode === "messages") {
        if (wanted.has("messages-tuple")) yield { event: named("messages", ns), data };
        return;
      }
      if (mode === "checkpoints" && isCheckpointEnvelope(data)) {
        // With stream_subgraphs, the library pairs each `values` chunk with a pointer to its
        // checkpoint (`{id, parent_id, step, source}`), streamed as a `checkpoints` event.
        if (pointers) yield { event: named(mode, ns), data };
        return;
      }
      if (wanted.has(mode)) yield { event: named(mode, ns), data: debugChunkPayload(mode, data) };
      // The state's new messages follow the state they came with, as on the LangGraph servers.
      if (mode === "values" && wanted.has("messages")) yield* completeMessages(data);
    },

    *callbackEvent(event: {
      event: string;
      data?: { chunk?: unknown };
      tags?: string[];
      metadata?: unknown;
    }): Generator<RunStreamEvent> {
      if (event.tags?.includes("langsmith:hidden")) return;
      if (wanted.has("events")) yield { event: "events", data: event };
      if (!wanted.has("messages") || event.event !== "on_chat_model_stream") return;
      if (event.tags?.includes("nostream")) return;
      const message = event.data?.chunk as { id?: string; concat?: (other: unknown) => unknown } | undefined;
      if (!message || typeof message.id !== "string") return;
      const previous = partial.get(message.id);
      if (!previous) {
        partial.set(message.id, message);
        yield { event: "messages/metadata", data: { [message.id]: { metadata: event.metadata } } };
      } else {
        partial.set(message.id, (previous.concat?.(message) ?? message) as typeof message);
      }
      yield { event: "messages/partial", data: [partial.get(message.id)] };
    },

    /** The events that close the stream: the ends of subgraphs left open (lifecycle mode). */
    *finish(failed: boolean): Generator<RunStreamEvent> {
      if (lifecycle) yield* lifecycle.finish(failed);
    },

    /** The last root `values` chunk, or undefined when the graph produced none. */
    output(): { value: unknown } | undefined {
      return hasOutput ? { value: output } : undefined;
    },
  };
}

/** An error as the `error` event and a failed run's output show it: `{error, message}`. */
export function errorData(error: unknown): { error: string; message: string } {
  if (error instanceof Error) return { error: error.name, message: error.message };
  return { error: "Error", message: JSON.stringify(toPlainJson(error)) };
}
