import type { OutgoingHttpHeaders } from "node:http";
import { type DescMessage, type JsonValue, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectError } from "@connectrpc/connect";
import {
  type ServerSentEvent,
  ServerSentEventSchema,
} from "../../../gen/agentplane/api/v1/server_sent_event_pb.js";
import type { NodeServerResponse } from "./node-types.js";

/**
 * Idle time between `: heartbeat` comments. Five seconds is what LangGraph's Python server sends;
 * the LangGraph JS SDK learns the interval from the comments and reconnects after three missed
 * ones, and proxies that drop silent connections (often after 30 to 60 s) never see one idle.
 */
export const defaultHeartbeatMs = 5_000;

/** Turns one (already normalised) stream message into a complete SSE frame. */
export type SseFramer = (message: unknown, sequence: number) => string;

/** The response headers of every SSE stream. */
const sseHeaders: OutgoingHttpHeaders = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  // Tells nginx not to buffer the stream, which would hold events back.
  "x-accel-buffering": "no",
};

/**
 * A comment line: ignored by every SSE parser. No blank line follows it, so no parser can take
 * it for an (empty) event.
 */
const heartbeatFrame = ": heartbeat\n";

/**
 * The framer for a stream of `output` messages. `agentplane.api.v1.ServerSentEvent` messages
 * choose their own frame: `event:` (`message` when empty), `data:` from the `data` Value and `id:`
 * (omitted when empty). Any other message is `id: <1-based sequence>`, `event: message` and its
 * JSON from `encode`. `JSON.stringify` never emits a newline, so each frame has one data line.
 */
export function createSseFramer(output: DescMessage, encode: (message: unknown) => JsonValue): SseFramer {
  if (output.typeName === ServerSentEventSchema.typeName) {
    return (message) => eventFrame(message as ServerSentEvent);
  }
  return (message, sequence) =>
    `id: ${sequence}\nevent: message\ndata: ${JSON.stringify(encode(message))}\n\n`;
}

/**
 * The frame of a stream message with no event, id or data: a comment, so that a producer can have
 * the response's headers sent before its first event (see ServerSentEvent in the protos).
 */
const openedFrame = ": stream opened\n";

function eventFrame(message: ServerSentEvent): string {
  if (message.event === "" && message.id === "" && message.data === undefined) return openedFrame;
  const data = message.data ? JSON.stringify(toJson(ValueSchema, message.data)) : "null";
  const id = singleLine(message.id);
  const event = singleLine(message.event) || "message";
  // event, data, id: the order both LangGraph servers write, which line-based clients may expect.
  return `event: ${event}\ndata: ${data}\n${id === "" ? "" : `id: ${id}\n`}\n`;
}

/** Strips line breaks, which would end the field early and let the rest forge frame lines. */
function singleLine(text: string): string {
  return /[\r\n]/.test(text) ? text.replace(/[\r\n]/g, "") : text;
}

/** The frame that reports an error after the stream began; the response ends after it. */
export function errorFrame(error: ConnectError): string {
  return `event: error\ndata: ${JSON.stringify({ error: codeName(error.code), message: error.rawMessage })}\n\n`;
}

/** `Code.NotFound` → `not_found`, the names Connect and gRPC use on the wire. */
function codeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/(?<=[a-z])(?=[A-Z])/g, "_").toLowerCase();
}

/** Options of {@link writeSse}. */
export interface SseWriteOptions {
  /** Idle time after which a heartbeat comment is sent. */
  readonly heartbeatMs: number;
  /** Ends the stream: the client went away or the server is shutting down. */
  readonly stop: AbortSignal;
  /** Extra headers for the 200 response, read when the response starts (handler headers). */
  readonly headers: () => OutgoingHttpHeaders;
  /** Turns what the stream threw into the error to report. */
  readonly toError: (error: unknown) => ConnectError;
}

const stopped = Symbol("stopped");

/**
 * Streams `messages` as Server-Sent Events. The 200 and its headers go out with the first frame
 * or heartbeat, so a stream that fails before either (a failed guard, an unknown id) rejects with
 * the `ConnectError` and the caller answers a normal REST error; a failure later is sent as an
 * `event: error` frame. When `stop` fires the current frame is already complete (frames are
 * written whole), the response ends, and the iterator is returned so the producer's `finally`
 * blocks run once its pending step settles (it sees the same abort through its context signal).
 */
export async function writeSse(
  res: NodeServerResponse,
  messages: AsyncIterable<unknown>,
  frame: SseFramer,
  options: SseWriteOptions,
): Promise<void> {
  const iterator = messages[Symbol.asyncIterator]();
  let started = false;
  const start = (): void => {
    if (started) return;
    started = true;
    res.writeHead(200, { ...options.headers(), ...sseHeaders });
  };
  const heartbeat = (): void => {
    start();
    res.write(heartbeatFrame);
  };
  // True once the iterator has finished or thrown: then there is nothing left to return().
  let settled = false;
  try {
    for (let sequence = 1; ; sequence++) {
      const step = await nextOrStop(iterator, options, heartbeat).catch((error: unknown) => {
        settled = true;
        throw error;
      });
      if (step === stopped) break;
      if (step.done) {
        settled = true;
        break;
      }
      start();
      if (!res.write(frame(step.value, sequence))) await drained(res, options.stop);
    }
  } catch (error) {
    const reported = options.toError(error);
    if (!started && !options.stop.aborted) throw reported;
    if (!options.stop.aborted) res.write(errorFrame(reported));
  } finally {
    if (!settled) iterator.return?.().catch(ignore);
  }
  if (res.destroyed) return;
  start();
  res.end();
}

function nextOrStop(
  iterator: AsyncIterator<unknown>,
  { heartbeatMs, stop }: SseWriteOptions,
  onIdle: () => void,
): Promise<IteratorResult<unknown> | typeof stopped> {
  if (stop.aborted) return Promise.resolve(stopped);
  const next = iterator.next();
  return new Promise((resolve, reject) => {
    const timer = setInterval(onIdle, heartbeatMs);
    const settle = (): void => {
      clearInterval(timer);
      stop.removeEventListener("abort", onStop);
    };
    const onStop = (): void => {
      settle();
      next.catch(ignore);
      resolve(stopped);
    };
    stop.addEventListener("abort", onStop);
    next.then(
      (result) => {
        settle();
        resolve(result);
      },
      (error: unknown) => {
        settle();
        reject(error);
      },
    );
  });
}

/** Waits until the response can take more data, or the stream is stopped. */
function drained(res: NodeServerResponse, stop: AbortSignal): Promise<void> {
  if (stop.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      stop.removeEventListener("abort", done);
      resolve();
    };
    res.once("drain", done);
    stop.addEventListener("abort", done);
  });
}

function ignore(): void {}
