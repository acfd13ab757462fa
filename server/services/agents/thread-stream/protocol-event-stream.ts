/**
 * A thread's protocol events as a client subscribes to them: the events of its protocol runs kept
 * in Postgres (while a run is active and for the stream TTL after it ends), after a seq, that pass
 * a filter of channels, namespace prefixes and depth, then every new one as it is written, by any
 * process. The filter has the semantics LangGraph's own streaming toolkit gives it
 * (`matchesSubscription` of `@langchain/langgraph/stream`), which the SDK applies on its side too.
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { isSupportedChannel, matchesSubscription } from "@langchain/langgraph/stream";
import type { Channel } from "@langchain/protocol";
import {
  type ProtocolEventEnvelope,
  parseProtocolParams,
  protocolEnvelope,
  protocolMethodOf,
} from "../../../runtime/protocol/protocol-event.js";
import { type StreamReaderDeps, threadEventRecords } from "../run-streams.js";

/** Which events a subscription receives. */
export interface ProtocolEventFilter {
  channels: Channel[];
  /** Namespace prefixes; undefined or empty: every namespace. */
  namespaces?: string[][];
  /** Levels below a prefix that pass; undefined: any. */
  depth?: number;
}

/**
 * A filter from what a client sent (an event stream's body, a WebSocket subscribe's params); the
 * problem, naming the field, when it is not one. Channels must be the protocol's (`custom:<name>`
 * included) and at least one.
 */
export function parseEventFilter(raw: {
  channels: unknown;
  namespaces?: unknown;
  depth?: unknown;
}): ProtocolEventFilter | { problem: string } {
  const { channels, namespaces, depth } = raw;
  if (!Array.isArray(channels) || channels.length === 0)
    return { problem: "channels must be a non-empty list of channels (values, updates, messages, ...)" };
  const unknown = channels.filter((c) => typeof c !== "string" || !isSupportedChannel(c));
  if (unknown.length > 0)
    return {
      problem: `channels: ${unknown.map((c) => JSON.stringify(c)).join(", ")} is not a channel; channels are values, updates, messages, tools, lifecycle, input, checkpoints, tasks, custom and custom:<name>`,
    };
  if (
    namespaces !== undefined &&
    namespaces !== null &&
    !(
      Array.isArray(namespaces) &&
      namespaces.every((n) => Array.isArray(n) && n.every((s) => typeof s === "string"))
    )
  )
    return {
      problem: "namespaces must be a list of namespaces, each a list of strings ([] is the root graph)",
    };
  if (
    depth !== undefined &&
    depth !== null &&
    !(typeof depth === "number" && Number.isInteger(depth) && depth >= 0)
  )
    return { problem: "depth must be a whole number of 0 or more" };
  return {
    channels: channels as Channel[],
    ...(Array.isArray(namespaces) && namespaces.length > 0 ? { namespaces: namespaces as string[][] } : {}),
    ...(typeof depth === "number" ? { depth } : {}),
  };
}

/** Whether `event` passes `filter`. */
export function passes(filter: ProtocolEventFilter, event: ProtocolEventEnvelope): boolean {
  return matchesSubscription(
    {
      method: event.method,
      params: { namespace: event.params.namespace, data: event.params.data },
      seq: event.seq,
    },
    filter,
  );
}

/**
 * The thread's protocol events after `afterSeq` that pass `filter`, until `signal` aborts: those
 * kept first (the replay), then the new ones, in seq order, each once.
 */
export async function* protocolEventStream(
  deps: StreamReaderDeps,
  thread: { workspaceId: string; threadId: string },
  options: { afterSeq: number; filter: ProtocolEventFilter; signal: AbortSignal },
): AsyncGenerator<ProtocolEventEnvelope> {
  for await (const row of threadEventRecords(deps, thread, options)) {
    const method = protocolMethodOf(row.event);
    if (method === undefined) continue;
    const event = protocolEnvelope(method, row, parseProtocolParams(row.data));
    if (passes(options.filter, event)) yield event;
  }
}

/** The seq a client's `Last-Event-ID` (an event id: `42`, or `synth:<run_id>:42`) names. */
export function seqOfEventId(id: string): number | undefined {
  const match = /^(?:synth:[^:]+:)?(\d+)$/.exec(id.trim());
  return match?.[1] ? Number(match[1]) : undefined;
}

/** The event as JSON, for the transports. */
export function eventJson(event: ProtocolEventEnvelope): JsonValue {
  return event;
}
