/**
 * Executes a run of the thread-centric streaming protocol: the graph's events as LangGraph's own
 * protocol events (`streamEvents(..., {version: "v3"})`, which the JS and Python Agent Servers
 * stream too), shaped by the protocol session (protocol-session.ts) and emitted as the run's
 * stored events. A graph built with a LangGraph older than that (a project with its own, older
 * `node_modules`) streams its chunks instead, converted by agentplane's LangGraph.
 */
import { convertToProtocolEvent, STREAM_EVENTS_V3_MODES } from "@langchain/langgraph/stream";
import type { CompiledGraph } from "../graph-registry.js";
import { graphInput, graphOptions, type RunExecution, type RunResult } from "../run-executor.js";
import { createLegacyMessages } from "./legacy-messages.js";
import {
  createProtocolSession,
  type LangGraphProtocolEvent,
  protocolRunEvent,
  rootLifecycleEvent,
} from "./protocol-session.js";

/** What a LangGraph without the v3 event stream throws when asked for it (its Runnable's check). */
const NO_V3_EVENTS = 'Only versions "v1" and "v2"';

/** Runs the graph once as a protocol run; throws what the graph throws, as `executeRun` does. */
export async function executeProtocolRun(x: RunExecution): Promise<RunResult> {
  x.emit({ event: "metadata", data: { run_id: x.runId, attempt: x.attempt } });
  x.emit(rootLifecycleEvent("running", x.graphId));
  // A run that answers interrupts says so first, so every client on the thread stops offering them.
  const answered = x.kwargs.protocol_answers;
  if (answered && answered.length > 0)
    x.emit(protocolRunEvent("input.answered", [], { interrupt_ids: answered }));
  const session = createProtocolSession(x.emit);
  for await (const event of protocolEvents(x.graph, graphInput(x.kwargs), graphOptions(x)))
    session.handle(event);
  x.signal.throwIfAborted();
  // The root's terminal lifecycle is written with the run's end (protocolEndEvent), in the same
  // transaction as the run's and its thread's new status, so a client that reads them on it sees them.
  return { output: session.output() };
}

/** The graph's protocol events: LangGraph's v3 event stream, or its chunks converted. */
async function* protocolEvents(
  graph: CompiledGraph,
  input: unknown,
  options: ReturnType<typeof graphOptions>,
): AsyncGenerator<LangGraphProtocolEvent> {
  let events: AsyncIterable<LangGraphProtocolEvent>;
  try {
    events = (await graph.streamEvents(input, {
      ...options,
      version: "v3",
    } as unknown as Parameters<CompiledGraph["streamEvents"]>[1])) as AsyncIterable<LangGraphProtocolEvent>;
  } catch (error) {
    if (!(error instanceof Error) || !error.message.includes(NO_V3_EVENTS)) throw error;
    yield* convertedChunks(graph, input, options);
    return;
  }
  yield* events;
}

/**
 * An older LangGraph's chunks of every mode the protocol maps, as protocol events: converted by
 * agentplane's LangGraph, its message chunks by legacy-messages.ts (that LangGraph streams no
 * content blocks).
 */
async function* convertedChunks(
  graph: CompiledGraph,
  input: unknown,
  options: ReturnType<typeof graphOptions>,
): AsyncGenerator<LangGraphProtocolEvent> {
  const pending: LangGraphProtocolEvent[] = [];
  const messages = createLegacyMessages(({ namespace, node, data }) =>
    pending.push({ method: "messages", params: { namespace, ...(node ? { node } : {}), data } }),
  );
  const chunks = await graph.stream(input, {
    ...options,
    streamMode: STREAM_EVENTS_V3_MODES,
    subgraphs: true,
  } as Parameters<CompiledGraph["stream"]>[1]);
  for await (const chunk of chunks as AsyncIterable<[string[], string, unknown]>) {
    const [namespace, mode, payload] = chunk;
    if (mode === "messages") {
      const [message, metadata] = Array.isArray(payload) ? payload : [payload, undefined];
      const node = (metadata as { langgraph_node?: unknown } | undefined)?.langgraph_node;
      messages.chunk(namespace, typeof node === "string" ? node : undefined, message);
    } else {
      const converted = convertToProtocolEvent({ namespace, mode: mode as never, payload, seq: 0 });
      if (mode === "updates") for (const event of converted) messages.nodeDone(namespace, event.params.node);
      pending.push(...converted);
    }
    yield* pending.splice(0);
  }
  messages.end();
  yield* pending.splice(0);
}
