/**
 * The streaming protocol's WebSocket, `GET /threads/{thread_id}/stream/events` with an upgrade:
 * the protocol's commands in, their answers and the subscribed events out, on one connection. It
 * is an adapter over ThreadStreamService's bound implementation (the same guard, input screen and
 * errors as its REST and Connect forms): each command is a `SendThreadCommand` call, and the
 * connection reads the thread's events through one `StreamThreadEvents` call of every channel.
 *
 * Invariants:
 * - Everything a connection sends goes out in one order: command answers and events are queued
 *   one after the other. Events go out in seq order, each once, when a subscription takes it.
 * - A subscription's answer goes out before any of its events. It then gets the thread's kept
 *   events it takes that went out before it existed (the connection keeps the last
 *   {@link REPLAY_EVENTS} it read), then the new ones; a client reconnecting on a new connection
 *   gets every kept event again, from Postgres, and skips those it saw by `event_id`.
 * - On a thread that does not exist yet, the connection waits for it (a `run.start` on this or
 *   another connection creates it) without failing the subscription.
 *
 * Authentication: as on every route, `x-api-key` (or `Authorization: Bearer`) and `x-tenant-id`
 * from the upgrade request's headers. A browser's `WebSocket` cannot send headers, so the key may
 * come as the query parameters `api_key` and `tenant_id` instead (a custom auth handler sees the
 * whole URL, so it can take a token of its own from the query). A connection whose credentials are
 * refused is closed with 4000 + the HTTP status (4401, 4403), which the SDK takes as final. A page
 * of another origin may connect only when CORS lets it call the server.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { create, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import { WebSocket, WebSocketServer } from "ws";
import {
  SendThreadCommandRequestSchema,
  StreamThreadEventsRequestSchema,
  type ThreadCommandResponse,
  ThreadCommandResponseSchema,
  ThreadStreamService,
} from "../../../gen/agentplane/agents/v1/thread_stream_service_pb.js";
import type { Logger } from "../../logger.js";
import type { ProtocolEventEnvelope } from "../../runtime/protocol/protocol-event.js";
import {
  type ProtocolEventFilter,
  parseEventFilter,
  passes,
} from "../../services/agents/thread-stream/protocol-event-stream.js";
import type { BoundService } from "../bound-service.js";
import { restErrorStatus } from "../rest/http-status.js";

/** Pings a connection this often; one that has not answered the previous ping by then is dead. */
const PING_INTERVAL_MS = 15_000;
/** The largest command a client may send: commands are small JSON envelopes. */
const MAX_MESSAGE_BYTES = 1024 * 1024;
/** How often a connection looks again for a thread that does not exist yet. */
const THREAD_WAIT_MS = 1_000;
/**
 * Events a connection keeps to replay to a subscription made later on it: the replay buffer the
 * Agent Server keeps per run. A new connection replays every kept event from Postgres.
 */
const REPLAY_EVENTS = 10_000;
/** The path of the socket: a thread's event stream. */
const SOCKET_PATH = /^\/threads\/([^/?#]+)\/stream\/events\/?$/;
/** Close code for a server going away (RFC 6455). */
const GOING_AWAY = 1001;
/** Every channel: the connection reads them all and sends what its subscriptions take. */
const ALL_CHANNELS = [
  "values",
  "updates",
  "messages",
  "tools",
  "lifecycle",
  "input",
  "checkpoints",
  "tasks",
  "custom",
];

/** Options of {@link createThreadStreamSockets}. */
export interface ThreadStreamSocketOptions {
  /** ThreadStreamService, bound (guard included). */
  readonly service: BoundService;
  /** Whether a browser page of `origin` may call the server (the CORS policy's answer). */
  readonly originAllowed: (req: IncomingMessage, origin: string) => boolean;
  /** Runs a connection's calls in their own request scope (custom encryption's context). */
  readonly inRequestScope: <T>(fn: () => T) => T;
  /** The graphs file's `http.mount_prefix`, which the path must start with. */
  readonly mountPrefix?: string;
  readonly log: Logger;
}

/** The WebSocket side of the server. */
export interface ThreadStreamSockets {
  /** Takes an upgrade request; false when it is not this socket's (the caller refuses it). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Closes every connection (going away) and stops accepting. */
  close(): void;
}

/** The thread id of an upgrade's path (after the mount prefix); undefined when it is not the socket's. */
function threadIdOf(url: string, mountPrefix: string | undefined): string | undefined {
  let path = url.split("?")[0] ?? "";
  if (mountPrefix) {
    if (!path.startsWith(mountPrefix)) return undefined;
    path = path.slice(mountPrefix.length);
  }
  const match = SOCKET_PATH.exec(path);
  if (!match?.[1]) return undefined;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return undefined;
  }
}

/** The upgrade's headers, with a key from the query (`api_key`, `tenant_id`) where none was sent. */
function callHeaders(req: IncomingMessage, url: URL): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  const key = url.searchParams.get("api_key");
  if (key && !headers.has("x-api-key") && !headers.has("authorization")) headers.set("x-api-key", key);
  const tenant = url.searchParams.get("tenant_id");
  if (tenant && !headers.has("x-tenant-id")) headers.set("x-tenant-id", tenant);
  return headers;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether `value` is an event of the thread's stream (what StreamThreadEvents sends as data). */
function isEnvelope(value: JsonValue): value is ProtocolEventEnvelope {
  return isObject(value) && value.type === "event" && typeof value.seq === "number" && isObject(value.params);
}

/** Creates the WebSocket side. */
export function createThreadStreamSockets(options: ThreadStreamSocketOptions): ThreadStreamSockets {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const { sendThreadCommand, streamThreadEvents } = options.service.impl;
  if (!sendThreadCommand || !streamThreadEvents) throw new Error("ThreadStreamService is not bound");
  const call = { command: sendThreadCommand, events: streamThreadEvents };

  function connection(ws: WebSocket, req: IncomingMessage, threadId: string): void {
    const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
    const headers = callHeaders(req, url);
    const closed = new AbortController();
    const subscriptions = new Map<string, ProtocolEventFilter>();
    const replay: ProtocolEventEnvelope[] = [];
    // The connection's one order: each write waits for the one before it.
    let queue: Promise<void> = Promise.resolve();
    let pumping = false;
    let wakePump: (() => void) | undefined;
    let alive = true;

    const context = (method: "sendThreadCommand" | "streamThreadEvents"): HandlerContext => ({
      service: ThreadStreamService,
      method: ThreadStreamService.method[method],
      protocolName: "websocket",
      requestMethod: "GET",
      url: url.toString(),
      requestHeader: headers,
      responseHeader: new Headers(),
      responseTrailer: new Headers(),
      signal: closed.signal,
      timeoutMs: () => undefined,
      values: createContextValues(),
    });

    /** Writes `message`; resolves once it is handed to the socket (backpressure). */
    const write = (message: JsonValue): Promise<void> =>
      new Promise((resolve) => {
        if (ws.readyState !== WebSocket.OPEN) return resolve();
        ws.send(JSON.stringify(message), () => resolve());
      });
    /** Runs `task` after everything queued before it. */
    const enqueue = (task: () => Promise<void>): Promise<void> => {
      queue = queue.then(task, task);
      return queue;
    };
    const send = (message: JsonValue): Promise<void> => enqueue(() => write(message));

    /** Ends the connection with 4000 + the HTTP status of `error`. */
    const refuse = (error: ConnectError) =>
      ws.close(4000 + restErrorStatus(error), error.rawMessage.slice(0, 120));

    /** Answers a failed command; a refused credential ends the connection. */
    const answerError = (id: number | null, error: unknown): Promise<void> => {
      if (
        error instanceof ConnectError &&
        (error.code === Code.Unauthenticated || error.code === Code.PermissionDenied)
      ) {
        refuse(error);
        return Promise.resolve();
      }
      const invalid = error instanceof ConnectError && error.code === Code.InvalidArgument;
      if (!invalid) options.log.error("protocol socket command failed", { threadId, error });
      return send({
        type: "error",
        id,
        error: invalid ? "invalid_argument" : "unknown_error",
        message: invalid ? (error as ConnectError).rawMessage : "the command failed on the server",
      });
    };

    /** Sends `event` to the subscriptions that take it, and keeps it for later ones. */
    const deliver = (event: ProtocolEventEnvelope): Promise<void> => {
      replay.push(event);
      if (replay.length > REPLAY_EVENTS) replay.shift();
      for (const filter of subscriptions.values()) if (passes(filter, event)) return write(event);
      return Promise.resolve();
    };

    /**
     * Reads the thread's events (every channel, from the first kept one) until the connection
     * closes; waits for a thread that does not exist yet.
     */
    const pump = async (): Promise<void> => {
      const request = create(StreamThreadEventsRequestSchema, { threadId, channels: ALL_CHANNELS });
      while (!closed.signal.aborted) {
        try {
          const events = call.events(request, context("streamThreadEvents")) as AsyncIterable<{
            data?: Value;
          }>;
          for await (const message of events) {
            // The stream's first message only opens it; every other one is an event.
            if (!message.data) continue;
            const event = toJson(ValueSchema, message.data);
            if (isEnvelope(event)) void enqueue(() => deliver(event));
          }
          return;
        } catch (error) {
          if (closed.signal.aborted) return;
          if (!(error instanceof ConnectError) || error.code !== Code.NotFound) {
            if (
              error instanceof ConnectError &&
              (error.code === Code.Unauthenticated || error.code === Code.PermissionDenied)
            )
              refuse(error);
            else options.log.warn("protocol socket stream ended on an error", { threadId, error });
            return;
          }
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, THREAD_WAIT_MS);
            wakePump = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wakePump = undefined;
        }
      }
    };

    const subscribe = (id: number, params: JsonObject): Promise<void> => {
      const filter = parseEventFilter({
        channels: params.channels,
        namespaces: params.namespaces,
        depth: params.depth,
      });
      if ("problem" in filter)
        return send({
          type: "error",
          id,
          error: "invalid_argument",
          message: `subscription.subscribe: ${filter.problem}`,
        });
      const subscriptionId = crypto.randomUUID();
      const done = enqueue(async () => {
        await write({ type: "success", id, result: { subscription_id: subscriptionId, replayed_events: 0 } });
        for (const event of replay) if (passes(filter, event)) await write(event);
        subscriptions.set(subscriptionId, filter);
      });
      if (!pumping) {
        pumping = true;
        options.inRequestScope(() => {
          pump().catch((error: unknown) =>
            options.log.error("protocol socket stream failed", { threadId, error }),
          );
        });
      }
      return done;
    };

    const unsubscribe = (id: number, params: JsonObject): Promise<void> => {
      const subscriptionId = params.subscription_id;
      if (typeof subscriptionId !== "string" || !subscriptions.delete(subscriptionId))
        return send({
          type: "error",
          id,
          error: "no_such_subscription",
          message: `no subscription ${JSON.stringify(subscriptionId ?? null)} on this connection`,
        });
      return send({ type: "success", id, result: {} });
    };

    const command = async (id: number, method: string, params: JsonObject): Promise<void> => {
      let answer: ThreadCommandResponse;
      try {
        answer = (await call.command(
          create(SendThreadCommandRequestSchema, { threadId, id, method, params }),
          context("sendThreadCommand"),
        )) as ThreadCommandResponse;
      } catch (error) {
        return answerError(id, error);
      }
      // A command that started a run created the thread if it was missing: the stream need not wait.
      wakePump?.();
      return send(
        toJson(ThreadCommandResponseSchema, create(ThreadCommandResponseSchema, answer), {
          useProtoFieldName: true,
        }),
      );
    };

    const handle = (text: string): Promise<void> => {
      let envelope: JsonValue;
      try {
        envelope = JSON.parse(text) as JsonValue;
      } catch {
        return send({
          type: "error",
          id: null,
          error: "invalid_argument",
          message: "protocol commands must be JSON",
        });
      }
      const body = isObject(envelope) ? envelope : {};
      const id = typeof body.id === "number" && Number.isInteger(body.id) && body.id >= 0 ? body.id : null;
      const method = typeof body.method === "string" ? body.method : "";
      const params = isObject(body.params) ? body.params : {};
      if (id === null || method === "")
        return send({
          type: "error",
          id,
          error: "invalid_argument",
          message: "a protocol command is {id, method, params}, with id a whole number of 0 or more",
        });
      if (method === "subscription.subscribe") return subscribe(id, params);
      if (method === "subscription.unsubscribe") return unsubscribe(id, params);
      if (method === "subscription.reconnect")
        return send({
          type: "error",
          id,
          error: "not_supported",
          message:
            "subscription.reconnect: subscribe again on the new connection; it replays the thread's kept events",
        });
      return command(id, method, params);
    };

    ws.on("message", (data, isBinary) => {
      const text = isBinary ? Buffer.from(data as Buffer).toString("utf8") : data.toString();
      options.inRequestScope(() => {
        handle(text).catch((error: unknown) =>
          options.log.error("protocol socket command failed", { threadId, error }),
        );
      });
    });
    ws.on("pong", () => {
      alive = true;
    });
    const ping = setInterval(() => {
      if (!alive) {
        ws.terminate();
        return;
      }
      alive = false;
      ws.ping();
    }, PING_INTERVAL_MS);
    ws.on("close", () => {
      clearInterval(ping);
      closed.abort();
      wakePump?.();
      subscriptions.clear();
    });
    ws.on("error", () => ws.terminate());
  }

  return {
    handleUpgrade(req, socket, head) {
      const threadId = threadIdOf(req.url ?? "/", options.mountPrefix);
      if (threadId === undefined) return false;
      const origin = req.headers.origin;
      if (origin !== undefined && !options.originAllowed(req, origin)) {
        socket.end(
          `HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${JSON.stringify(
            {
              detail: `WebSocket connections from ${origin} are not allowed: add the origin to AGENTPLANE_CORS_ORIGINS`,
            },
          )}`,
        );
        return true;
      }
      wss.handleUpgrade(req, socket, head, (ws) => connection(ws, req, threadId));
      return true;
    },
    close() {
      for (const client of wss.clients) client.close(GOING_AWAY, "the server is shutting down");
      wss.close();
    },
  };
}
