/**
 * What a protocol run's stream holds, given the protocol events LangGraph produces for it
 * (`streamEvents(..., {version: "v3"})`, or chunks converted by `convertToProtocolEvent`):
 *
 * - the root graph's `lifecycle` events are the server's own (`running` when an attempt starts,
 *   `completed` / `interrupted` / `failed` when the run ends, decided from the run's outcome and its
 *   thread's pending interrupts); LangGraph's root lifecycle events are dropped, its subgraphs' kept;
 * - interrupts become one `input.requested` event each (`{interrupt_id, payload}`), the first time
 *   their id is seen in the run, wherever LangGraph reports them (an `updates` event of the
 *   `__interrupt__` node, or the `__interrupt__` key of a `values` event); the marker itself is
 *   not sent;
 * - `values` and `updates` carry the state in the protocol's shape (protocol-state.ts); a `values`
 *   event left empty by removing the marker is not sent; an `updates` event carries the node's
 *   update as its data and the node in `params.node`;
 * - user channels (`custom:<name>`, and methods no channel knows) are `custom` events
 *   `{name, payload}`;
 * - `messages`, `tools`, `checkpoints`, `tasks` and subgraph `lifecycle` pass as they are.
 *
 * The last root `values` LangGraph produced is the run's output, as for every run.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { toPlainJson } from "../plain-json.js";
import type { RunStreamEvent } from "../run-stream-event.js";
import type { ResumeRefusal } from "../strict-resume.js";
import { type ProtocolEventParams, protocolEventName } from "./protocol-event.js";
import { INTERRUPT_KEY, protocolState } from "./protocol-state.js";

/** A protocol event as LangGraph produces it: its method and params (its own seq is ignored). */
export interface LangGraphProtocolEvent {
  method: string;
  params: { namespace: readonly string[]; timestamp?: number; node?: string; data: unknown };
}

/** The root graph's lifecycle statuses the server reports. */
export type RootLifecycle = "running" | "completed" | "interrupted" | "failed";

/** Methods whose events are stored as LangGraph produced them. */
const PASSED_THROUGH = new Set(["messages", "tools", "checkpoints", "tasks"]);

/** The internal node LangGraph reports interrupts under in `updates`. */
const INTERRUPT_NODE = "__interrupt__";

/** The event that stores `data` under `method` for namespace `namespace`. */
export function protocolRunEvent(
  method: string,
  namespace: readonly string[],
  data: JsonValue,
  extra: { node?: string; timestamp?: number } = {},
): RunStreamEvent {
  const params: ProtocolEventParams = {
    namespace: [...namespace],
    timestamp: extra.timestamp ?? Date.now(),
    ...(extra.node !== undefined ? { node: extra.node } : {}),
    data,
  };
  return { event: protocolEventName(method), data: params };
}

/** The root `lifecycle` event of `status` for the graph `graphName`. */
export function rootLifecycleEvent(
  status: RootLifecycle,
  graphName: string,
  error?: string,
  extra: JsonObject = {},
): RunStreamEvent {
  return protocolRunEvent("lifecycle", [], {
    event: status,
    graph_name: graphName,
    ...(error !== undefined ? { error } : {}),
    ...extra,
  });
}

/**
 * The root `lifecycle` event that ends a protocol run, from how it ended: `completed`, or
 * `interrupted` when it stopped waiting for input (interrupts pending) or was cancelled, or
 * `failed` with the error's message.
 */
export function protocolEndEvent(
  outcome: { status: string; error?: string; refusal?: ResumeRefusal; waitingForInput: boolean },
  graphName: string,
): RunStreamEvent {
  if (outcome.status === "error" || outcome.status === "timeout")
    // A refused strict resume says why, and which interrupts still wait (the SDK shows them again).
    return rootLifecycleEvent("failed", graphName, outcome.error ?? "the run failed", {
      ...(outcome.refusal ? { ...outcome.refusal } : {}),
    });
  if (outcome.status === "interrupted" || outcome.waitingForInput)
    return rootLifecycleEvent("interrupted", graphName);
  return rootLifecycleEvent("completed", graphName);
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `{interrupt_id, payload}` of each interrupt with an id in a list of LangGraph interrupts. */
function interruptRequests(raw: JsonValue | undefined): ({ interrupt_id: string } & JsonObject)[] {
  const list = Array.isArray(raw)
    ? raw
    : isObject(raw) && Array.isArray(raw[INTERRUPT_KEY])
      ? raw[INTERRUPT_KEY]
      : [];
  return list.flatMap((entry) =>
    isObject(entry) && typeof entry.id === "string"
      ? [
          {
            interrupt_id: entry.id,
            payload: entry.value ?? null,
            // The JSON Schema of the answer, when the graph gave one (interrupt's responseSchema).
            ...(isObject(entry.response_schema) ? { response_schema: entry.response_schema } : {}),
          },
        ]
      : [],
  );
}

/** Maps one run's LangGraph protocol events to stored events (see the module comment). */
export function createProtocolSession(emit: (event: RunStreamEvent) => void) {
  const requested = new Set<string>();
  let output: { value: unknown } | undefined;

  const requestInput = (namespace: readonly string[], raw: JsonValue | undefined): void => {
    for (const request of interruptRequests(raw)) {
      if (requested.has(request.interrupt_id)) continue;
      requested.add(request.interrupt_id);
      emit(protocolRunEvent("input.requested", namespace, request));
    }
  };

  return {
    /** Takes one LangGraph protocol event. */
    handle(event: LangGraphProtocolEvent): void {
      const { method, params } = event;
      const ns = params.namespace;
      const at = { timestamp: params.timestamp ?? Date.now() };
      if (method === "values") {
        if (ns.length === 0) output = { value: params.data };
        const values = toPlainJson(params.data);
        if (isObject(values) && INTERRUPT_KEY in values) requestInput(ns, values[INTERRUPT_KEY]);
        const state = protocolState(values);
        if (isObject(state) && Object.keys(state).length === 0) return;
        emit(protocolRunEvent("values", ns, state, at));
        return;
      }
      if (method === "updates") {
        const data = toPlainJson(params.data);
        const node = params.node ?? (isObject(data) && typeof data.node === "string" ? data.node : undefined);
        const values = isObject(data) && "values" in data ? data.values : data;
        if (node === INTERRUPT_NODE) {
          requestInput(ns, values);
          return;
        }
        emit(
          protocolRunEvent("updates", ns, protocolState(values ?? {}), { ...at, ...(node ? { node } : {}) }),
        );
        return;
      }
      if (method === "lifecycle") {
        // The root's lifecycle is the server's: it knows the run's outcome, LangGraph does not.
        if (ns.length > 0) emit(protocolRunEvent("lifecycle", ns, toPlainJson(params.data), at));
        return;
      }
      if (method === "debug") return;
      if (PASSED_THROUGH.has(method)) {
        emit(
          protocolRunEvent(method, ns, toPlainJson(params.data), {
            ...at,
            ...(params.node !== undefined ? { node: params.node } : {}),
          }),
        );
        return;
      }
      const data = toPlainJson(params.data);
      if (method === "custom") {
        // Already `{payload}` (or `{name, ...}` for a named payload), as convertToProtocolEvent makes it.
        emit(protocolRunEvent("custom", ns, data, at));
        return;
      }
      // A named user channel: `custom:<name>`, or a transformer's own channel name.
      const name = method.startsWith("custom:") ? method.slice("custom:".length) : method;
      emit(protocolRunEvent("custom", ns, { name, payload: data }, at));
    },

    /** The last root `values` LangGraph produced (the run's output); undefined when none. */
    output: (): { value: unknown } | undefined => output,
  };
}
