import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { StreamEvent } from "@langchain/core/tracers/log_stream";
import { Command, Send } from "@langchain/langgraph";
import type { CompiledGraph } from "./graph-registry.js";
import type { RunCommand, RunKwargs } from "./run-kwargs.js";
import type { RunStreamEvent } from "./run-stream-event.js";
import {
  createStreamMapper,
  libraryModes,
  needsCallbackEvents,
  streamsSubgraphs,
} from "./run-stream-modes.js";

/** One execution (attempt) of a run. */
export interface RunExecution {
  /** The graph, loaded with the workspace's checkpointer and store. */
  graph: CompiledGraph;
  runId: string;
  threadId: string;
  assistantId: string;
  graphId: string;
  kwargs: RunKwargs;
  /** The run's metadata (assistant's, thread's and request's merged). */
  metadata: Record<string, unknown>;
  /** 1 for the first attempt. */
  attempt: number;
  /** Stops the graph (cancel, timeout, lost lease, shutdown). */
  signal: AbortSignal;
  /** Receives every API event, in order, as it happens. */
  emit(event: RunStreamEvent): void;
  /** Callback handlers of the run (its tracer). */
  callbacks?: BaseCallbackHandler[];
}

/** What a completed execution produced: the last root `values` chunk, if any. */
export interface RunResult {
  output: { value: unknown } | undefined;
}

/** The API's command as the library's `Command`; `goto` entries that are objects become `Send`s. */
export function toCommand(command: RunCommand): Command {
  const goto = command.goto === undefined || command.goto === null ? undefined : command.goto;
  const list = goto === undefined ? undefined : Array.isArray(goto) ? goto : [goto];
  return new Command({
    ...(list
      ? {
          goto: list.map((item) => {
            if (typeof item === "string") return item;
            const send = item as { node: string; input?: unknown };
            return new Send(send.node, send.input);
          }),
        }
      : {}),
    ...(command.update !== undefined ? { update: command.update as Record<string, unknown> } : {}),
    ...(command.resume !== undefined ? { resume: command.resume } : {}),
  });
}

/** The graph's input: the run's command as the library's, or its input. */
export function graphInput(kwargs: RunKwargs): unknown {
  return kwargs.command ? toCommand(kwargs.command) : (kwargs.input ?? null);
}

/**
 * The options every execution passes the graph: the run's config (its `configurable` with the
 * run's ids and checkpoint), metadata, context, interrupts, durability, signal, callbacks and run id.
 */
export function graphOptions(x: RunExecution) {
  const { kwargs, runId } = x;
  const { tags, recursion_limit: recursionLimit, configurable, ...rest } = kwargs.config;
  return {
    ...rest,
    ...(tags ? { tags } : {}),
    ...(recursionLimit !== undefined ? { recursionLimit } : {}),
    configurable: {
      ...configurable,
      thread_id: x.threadId,
      run_id: runId,
      graph_id: x.graphId,
      assistant_id: x.assistantId,
      ...(kwargs.checkpoint
        ? { checkpoint_id: kwargs.checkpoint.checkpoint_id, checkpoint_ns: kwargs.checkpoint.checkpoint_ns }
        : {}),
    },
    metadata: {
      ...x.metadata,
      run_id: runId,
      run_attempt: x.attempt,
      thread_id: x.threadId,
      graph_id: x.graphId,
      assistant_id: x.assistantId,
    },
    context: kwargs.context,
    ...(kwargs.interrupt_before ? { interruptBefore: kwargs.interrupt_before } : {}),
    ...(kwargs.interrupt_after ? { interruptAfter: kwargs.interrupt_after } : {}),
    ...(kwargs.durability ? { durability: kwargs.durability } : {}),
    signal: x.signal,
    ...(x.callbacks ? { callbacks: x.callbacks } : {}),
    runId,
  };
}

/**
 * Runs the graph once, streaming its chunks as API events through `emit`: `metadata` first, then
 * whatever the stream modes ask for. Throws what the graph throws (an abort included); the caller
 * decides the run's status. When an earlier attempt of the same run left checkpoints, the library
 * resumes from the last one: the run id in the config metadata matches the checkpoint's.
 */
export async function executeRun(x: RunExecution): Promise<RunResult> {
  const { kwargs, runId } = x;
  x.emit({ event: "metadata", data: { run_id: runId, attempt: x.attempt } });
  const modes = kwargs.stream_mode;
  const mapper = createStreamMapper(modes, kwargs.subgraphs);
  const input = graphInput(kwargs);
  const subgraphs = streamsSubgraphs(modes, kwargs.subgraphs);
  const options = {
    ...graphOptions(x),
    streamMode: libraryModes(modes),
    subgraphs,
  };
  const emitAll = (events: Iterable<RunStreamEvent>): void => {
    for (const event of events) x.emit(event);
  };
  const emitChunk = (chunk: [string[], string, unknown] | [string, unknown]): void => {
    // With subgraphs the library names each chunk's namespace (a root node's messages carry the
    // node's own); without, chunks are [mode, data] of the root graph.
    const [ns, mode, data] = subgraphs
      ? (chunk as [string[], string, unknown])
      : [[], ...(chunk as [string, unknown])];
    emitAll(mapper.chunk(ns as string[], mode as string, data));
  };
  try {
    await streamChunks(x, input, options, subgraphs, emitChunk, emitAll, mapper);
  } catch (error) {
    if (!x.signal.aborted) emitAll(mapper.finish(true));
    throw error;
  }
  x.signal.throwIfAborted();
  emitAll(mapper.finish(false));
  return { output: mapper.output() };
}

/** Streams the graph's chunks (and callback events, when the modes need them) into the mapper. */
async function streamChunks(
  x: RunExecution,
  input: unknown,
  options: ReturnType<typeof graphOptions> & { streamMode: string[]; subgraphs: boolean },
  subgraphs: boolean,
  emitChunk: (chunk: [string[], string, unknown] | [string, unknown]) => void,
  emitAll: (events: Iterable<RunStreamEvent>) => void,
  mapper: ReturnType<typeof createStreamMapper>,
): Promise<void> {
  const { runId } = x;
  const modes = x.kwargs.stream_mode;
  if (!needsCallbackEvents(modes)) {
    // Every mode asked for is one of the library's: its own stream carries them, without the
    // callback event stream's handler on every runnable (most of a small run's CPU).
    // With subgraphs, the library pairs `values` chunks with checkpoint pointers only for a
    // callback event stream, which it recognises by the `version` option (as the JS server's
    // streamEvents call passes it); the same option asks for them here.
    const streamOptions = subgraphs ? { ...options, version: "v2" } : options;
    const chunks = await x.graph.stream(input, streamOptions as Parameters<CompiledGraph["stream"]>[1]);
    for await (const chunk of chunks as AsyncIterable<[string[], string, unknown] | [string, unknown]>)
      emitChunk(chunk);
  } else {
    // Through the callback event stream, as the LangGraph servers do: chat models then stream
    // their tokens (so `messages` modes have chunks), and messages are serialised as they serialise
    // them (the streamed AIMessageChunk, with its tool_call_chunks).
    const eventOptions = { ...options, version: "v2" } as unknown as Parameters<
      CompiledGraph["streamEvents"]
    >[1];
    const events = (await x.graph.streamEvents(input, eventOptions)) as AsyncIterable<StreamEvent>;
    for await (const event of events) {
      if (event.event === "on_chain_stream" && event.run_id === runId)
        emitChunk(event.data.chunk as [string[], string, unknown] | [string, unknown]);
      else emitAll(mapper.callbackEvent(event));
    }
  }
}
