/**
 * How a run of the thread-centric streaming protocol ("protocol v2") stores its events among the
 * thread's run events (`agent_run_events`, design decision 7): each event is one row whose name is
 * the protocol method behind {@link PROTOCOL_EVENT_PREFIX} and whose data is the event's `params`
 * (namespace, timestamp, node, data). The row's seq, drawn from one database sequence, is the
 * event's `seq` on the wire: it rises along a thread across runs and processes, which is what the
 * protocol's `since` and the clients' ordering need. Events without the prefix belong to runs
 * created through the run endpoints and are not part of the protocol's stream.
 */
import type { JsonValue } from "@bufbuild/protobuf";

/** Prefix of a stored protocol event's name: `protocol:values`, `protocol:lifecycle`, ... */
export const PROTOCOL_EVENT_PREFIX = "protocol:";

/** The `params` of a protocol event, as stored. */
export type ProtocolEventParams = {
  /** The graph's namespace: `[]` for the root graph, one segment per subgraph level. */
  namespace: string[];
  /** Milliseconds since the epoch when it was produced. */
  timestamp: number;
  /** The node that produced it, when one did. */
  node?: string;
  /** The payload; its shape depends on the method. */
  data: JsonValue;
};

/** A protocol event as clients receive it. */
export type ProtocolEventEnvelope = {
  type: "event";
  event_id: string;
  seq: number;
  method: string;
  params: ProtocolEventParams;
};

/** The stored name of a protocol event of `method`. */
export function protocolEventName(method: string): string {
  return `${PROTOCOL_EVENT_PREFIX}${method}`;
}

/** The method of a stored protocol event; undefined for an event that is not one. */
export function protocolMethodOf(storedName: string): string | undefined {
  return storedName.startsWith(PROTOCOL_EVENT_PREFIX)
    ? storedName.slice(PROTOCOL_EVENT_PREFIX.length)
    : undefined;
}

/** The params of a stored protocol event, from its stored data (JSON text). */
export function parseProtocolParams(data: string): ProtocolEventParams {
  const parsed = JSON.parse(data) as Partial<ProtocolEventParams> | null;
  return {
    namespace: Array.isArray(parsed?.namespace) ? parsed.namespace : [],
    timestamp: typeof parsed?.timestamp === "number" ? parsed.timestamp : 0,
    ...(typeof parsed?.node === "string" ? { node: parsed.node } : {}),
    data: parsed?.data ?? null,
  };
}

/**
 * The envelope of a stored protocol event. Its `event_id` is its seq, except for the root graph's
 * `lifecycle` events, which the server (not the graph) produces: `synth:<run_id>:<seq>`, the form
 * the Agent Server gives them, from which `@langchain/langgraph-sdk` learns which run an event
 * starts or ends (events carry no run id of their own).
 */
export function protocolEnvelope(
  method: string,
  row: { seq: number; runId: string },
  params: ProtocolEventParams,
): ProtocolEventEnvelope {
  const synthesized = method === "lifecycle" && params.namespace.length === 0;
  return {
    type: "event",
    event_id: synthesized ? `synth:${row.runId}:${row.seq}` : String(row.seq),
    seq: row.seq,
    method,
    params,
  };
}
