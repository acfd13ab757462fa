/**
 * Server streams of events (RPCs that stream `agentplane.api.v1.ServerSentEvent`, the messages
 * whose REST form is SSE), decoded and resumed. Each event comes out as `{id, event, data}` with
 * `data` plain JSON. When the connection drops, the stream is reopened after the last event it
 * delivered, so the caller sees every event once:
 *
 * - a stream whose request has a `last_event_id` field (a join of a run or of a thread) is called
 *   again with it (and the `Last-Event-ID` header) set to the last event's id;
 * - a run-creating stream (`StreamRun`) continues as a join of the run it created (`JoinRunStream`),
 *   from the last event's id, or from the start when none had arrived; the run is known from the
 *   answer's `Location` header or its first (`metadata`) event. A drop before either reached the
 *   client is not resumed: the run may not exist, and creating another is not the caller's wish.
 *
 * A drop is what the transport reports as `UNKNOWN` (the connection failed mid-answer) or
 * `UNAVAILABLE`; every other error, and a cancel by the caller's signal, ends the stream at once.
 */
import type { DescMethod, JsonValue } from "@bufbuild/protobuf";
import { type CallOptions, Code, ConnectError } from "@connectrpc/connect";
import {
  type ServerSentEvent,
  ServerSentEventSchema,
} from "../gen/agentplane/api/v1/server_sent_event_pb.js";
import { valueJson } from "./plain-json.js";

/** One event of a stream: its id (for resumption), its name, and its data as plain JSON. */
export interface StreamEvent {
  /** The event's id; empty for events the server does not number. */
  readonly id: string;
  /** The event's name, such as `metadata`, `values` or `updates|<namespace>`. */
  readonly event: string;
  /** Its payload. */
  readonly data: JsonValue;
}

/** What a stream tells {@link ReconnectOptions.onReconnect} before it reopens. */
export interface ReconnectInfo {
  /** 1 for the first reopening since the last event arrived, then 2, ... */
  readonly attempt: number;
  /** The id the stream resumes after; undefined when no event had arrived. */
  readonly lastEventId: string | undefined;
  /** The error that ended the connection. */
  readonly error: ConnectError;
}

/** How event streams reconnect after a dropped connection. */
export interface ReconnectOptions {
  /** Reopenings in a row without an event in between before the error is thrown; default 5. */
  readonly maxAttempts?: number;
  /** Wait before the first reopening, doubled for each one after it; default 250 ms. */
  readonly initialDelayMs?: number;
  /** Longest wait between reopenings; default 5 s. */
  readonly maxDelayMs?: number;
  /** Told of every reopening, before its wait. */
  readonly onReconnect?: (info: ReconnectInfo) => void;
}

/**
 * The defaults: a few quick attempts, since the server keeps a run's events and a client usually
 * reconnects within a second, backing off to 5 s so that clients of a restarting server spread out.
 */
const DEFAULTS = { maxAttempts: 5, initialDelayMs: 250, maxDelayMs: 5_000 } as const;

/** Share of each wait drawn at random (±), so that clients dropped together do not return together. */
const JITTER = 0.2;

/** The type name of the event messages. */
export const EVENT_MESSAGE = ServerSentEventSchema.typeName;

/** A server-streaming call of the service, made on the transport: a connect-es client method. */
export type StreamCall = (request: unknown, options?: CallOptions) => AsyncIterable<ServerSentEvent>;

/** What a stream of `method` needs: the call itself, and the service's other methods' calls. */
export interface EventStreamCall {
  readonly method: DescMethod;
  /** Calls of the service's server-streaming methods, by local name. */
  readonly calls: Readonly<Record<string, StreamCall>>;
  /** The request, as protobuf-es takes it. */
  readonly request: Record<string, unknown>;
  readonly options: CallOptions | undefined;
  /** Reconnection settings; false: never reopen. */
  readonly reconnect: ReconnectOptions | false;
}

/** How one stream is reopened. */
interface Resumption {
  /** The options of the first call (a resumption may watch its headers). */
  readonly firstOptions: CallOptions | undefined;
  /** Sees every event as it passes. */
  observe(event: ServerSentEvent): void;
  /** Whether the stream can be reopened now. */
  canReopen(): boolean;
  /** The stream after `lastEventId` (undefined: after nothing); called only when it can be. */
  reopen(lastEventId: string | undefined): AsyncIterable<ServerSentEvent>;
}

/** The events of an event-streaming call, decoded, resumed after drops. */
export async function* eventStream(call: EventStreamCall): AsyncGenerator<StreamEvent> {
  const resumption = resumptionOf(call);
  const settings = call.reconnect === false ? undefined : { ...DEFAULTS, ...call.reconnect };
  const signal = call.options?.signal;
  const first = call.calls[call.method.localName]!;
  let stream: AsyncIterable<ServerSentEvent> = first(call.request, resumption.firstOptions);
  let lastEventId: string | undefined;
  let attempt = 0;
  for (;;) {
    try {
      for await (const message of stream) {
        attempt = 0;
        // A message with no id, event or data only opens the stream (see ServerSentEvent): skipped.
        if (message.id === "" && message.event === "" && message.data === undefined) continue;
        if (message.id !== "") lastEventId = message.id;
        resumption.observe(message);
        yield decode(message);
      }
      return;
    } catch (thrown) {
      const error = ConnectError.from(thrown);
      if (!settings || signal?.aborted || !isDrop(error) || attempt >= settings.maxAttempts) throw error;
      if (!resumption.canReopen()) throw error;
      attempt += 1;
      settings.onReconnect?.({ attempt, lastEventId, error });
      await pause(backoff(settings, attempt), signal);
      stream = resumption.reopen(lastEventId);
    }
  }
}

function decode(message: ServerSentEvent): StreamEvent {
  return {
    id: message.id,
    // The SSE form names an unnamed event `message`; so does the SDK.
    event: message.event === "" ? "message" : message.event,
    data: message.data ? valueJson(message.data) : null,
  };
}

function isDrop(error: ConnectError): boolean {
  return error.code === Code.Unknown || error.code === Code.Unavailable;
}

function backoff(settings: Required<Omit<ReconnectOptions, "onReconnect">>, attempt: number): number {
  const base = Math.min(settings.initialDelayMs * 2 ** (attempt - 1), settings.maxDelayMs);
  return base * (1 - JITTER + 2 * JITTER * Math.random());
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(ConnectError.from(signal.reason, Code.Canceled));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(ConnectError.from(signal?.reason, Code.Canceled));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Run-creating streams, and the join of the run that continues each. */
const CONTINUED_AS_JOIN: Readonly<Record<string, string>> = {
  "agentplane.agents.v1.RunService.StreamRun": "joinRunStream",
};

function resumptionOf(call: EventStreamCall): Resumption {
  const join = CONTINUED_AS_JOIN[`${call.method.parent.typeName}.${call.method.name}`];
  if (join) return runJoinResumption(call, call.calls[join]!);
  const field = call.method.input.fields.find((f) => f.name === "last_event_id");
  return {
    firstOptions: call.options,
    observe() {},
    canReopen: () => field !== undefined,
    reopen(lastEventId) {
      const first = call.calls[call.method.localName]!;
      if (lastEventId === undefined) return first(call.request, call.options);
      return first(
        { ...call.request, [field!.localName]: lastEventId },
        withLastEventId(call.options, lastEventId),
      );
    },
  };
}

/** Where a run-creating answer's `Location` header names the run and its thread. */
const LOCATION = /^(?:\/threads\/([^/]+))?\/runs\/([^/]+)\/stream$/;

function runJoinResumption(call: EventStreamCall, join: StreamCall): Resumption {
  let runId: string | undefined;
  let threadId = typeof call.request.threadId === "string" ? call.request.threadId : undefined;
  const onHeader = call.options?.onHeader;
  return {
    firstOptions: {
      ...call.options,
      onHeader(headers) {
        const match = LOCATION.exec(headers.get("location") ?? "");
        if (match?.[2]) {
          runId = decodeURIComponent(match[2]);
          if (match[1]) threadId = decodeURIComponent(match[1]);
        }
        onHeader?.(headers);
      },
    },
    observe(event) {
      if (runId !== undefined || event.event !== "metadata" || !event.data) return;
      const data = valueJson(event.data);
      if (data && typeof data === "object" && !Array.isArray(data) && typeof data.run_id === "string")
        runId = data.run_id;
    },
    canReopen: () => runId !== undefined,
    reopen(lastEventId) {
      // Everything from the start when nothing had arrived: the run's first events are the caller's.
      const after = lastEventId ?? "-1";
      const cancel = jsonString(call.request.onDisconnect) === "cancel";
      return join(
        {
          ...(threadId === undefined ? {} : { threadId }),
          runId,
          lastEventId: after,
          ...(cancel ? { cancelOnDisconnect: "true" } : {}),
        },
        withLastEventId(call.options, after),
      );
    },
  };
}

/** A string held by a Value of the request, if it holds one. */
function jsonString(value: unknown): string | undefined {
  const kind = (value as { kind?: { case?: string; value?: unknown } } | undefined)?.kind;
  return kind?.case === "stringValue" && typeof kind.value === "string" ? kind.value : undefined;
}

/** `options` with the `Last-Event-ID` header set, which the server reads before the request field. */
function withLastEventId(options: CallOptions | undefined, id: string): CallOptions {
  const headers = new Headers(options?.headers);
  headers.set("last-event-id", id);
  return { ...options, headers };
}
