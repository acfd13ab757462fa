/**
 * The client of one service: connect-es's client for it, with requests and answers in plain JSON
 * where the proto holds JSON (plain-json.ts) and event streams decoded and resumed
 * (event-streams.ts). Every error is a `ConnectError`: the server's, whose `rawMessage` is the
 * `detail` the REST API answers, or the SDK's own for a request it cannot send.
 */
import type {
  DescMethodServerStreaming,
  DescMethodUnary,
  DescService,
  Message,
  MessageShape,
} from "@bufbuild/protobuf";
import { type CallOptions, createClient as createProtoClient, type Transport } from "@connectrpc/connect";
import {
  EVENT_MESSAGE,
  eventStream,
  type ReconnectOptions,
  type StreamCall,
  type StreamEvent,
} from "./event-streams.js";
import { type Plain, type PlainInit, toPlain, toRequestInit } from "./plain-json.js";

/** What a server stream of messages `O` yields: decoded events, or plain messages. */
export type StreamItem<O extends Message> = O["$typeName"] extends typeof EVENT_MESSAGE
  ? StreamEvent
  : Plain<O>;

/**
 * The client of service `S`: a method per unary RPC (a promise of the answer) and per
 * server-streaming RPC (an async iterable). Client- and bidi-streaming RPCs need streaming request
 * bodies, which `fetch` cannot send: they have no method here.
 */
export type ServiceClient<S extends DescService> = {
  [M in keyof S["method"] as S["method"][M] extends DescMethodUnary | DescMethodServerStreaming
    ? M
    : never]: S["method"][M] extends DescMethodUnary<infer I, infer O>
    ? (request?: PlainInit<MessageShape<I>>, options?: CallOptions) => Promise<Plain<MessageShape<O>>>
    : S["method"][M] extends DescMethodServerStreaming<infer I, infer O>
      ? (
          request?: PlainInit<MessageShape<I>>,
          options?: CallOptions,
        ) => AsyncIterable<StreamItem<MessageShape<O>>>
      : never;
};

/** Settings every service client of one {@link createServiceClient} caller shares. */
export interface ServiceClientSettings {
  /** How event streams reconnect; false: never. */
  readonly reconnect: ReconnectOptions | false;
}

type RawMethod = (request: unknown, options?: CallOptions) => unknown;

/** The {@link ServiceClient} of `service` on `transport`. */
export function createServiceClient<S extends DescService>(
  service: S,
  transport: Transport,
  settings: ServiceClientSettings,
): ServiceClient<S> {
  const raw = createProtoClient(service, transport) as unknown as Record<string, RawMethod>;
  const streams: Record<string, StreamCall> = {};
  for (const method of service.methods)
    if (method.methodKind === "server_streaming")
      streams[method.localName] = raw[method.localName] as StreamCall;
  const client: Record<string, unknown> = {};
  for (const method of service.methods) {
    const call = raw[method.localName]!;
    if (method.methodKind === "unary") {
      client[method.localName] = async (request: unknown = {}, options?: CallOptions) =>
        toPlain(method.output, (await call(toRequestInit(method.input, request), options)) as Message);
    } else if (method.methodKind === "server_streaming") {
      client[method.localName] = (request: unknown = {}, options?: CallOptions) =>
        method.output.typeName === EVENT_MESSAGE
          ? (async function* () {
              const init = toRequestInit(method.input, request) as Record<string, unknown>;
              yield* eventStream({
                method,
                calls: streams,
                request: init,
                options,
                reconnect: settings.reconnect,
              });
            })()
          : (async function* () {
              const messages = call(toRequestInit(method.input, request), options) as AsyncIterable<Message>;
              for await (const message of messages) yield toPlain(method.output, message);
            })();
    }
  }
  return client as ServiceClient<S>;
}
