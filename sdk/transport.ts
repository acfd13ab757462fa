/**
 * The transport every client of {@link createClient} shares: Connect (JSON or binary) or gRPC-Web
 * on `fetch`, with the caller's key and workspace on every call.
 */
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";

/** Wire protocols the client can speak. */
export type ClientProtocol = "connect" | "connect-binary" | "grpc-web";

/** How to reach the server, and as whom. */
export interface TransportOptions {
  /** Server address, such as `http://127.0.0.1:2024`. */
  baseUrl: string;
  /** Sent as `x-api-key` on every call. */
  apiKey?: string | undefined;
  /** Workspace id sent as `x-tenant-id` on every call; a personal key falls back to its default. */
  tenantId?: string | undefined;
  /** `connect` (JSON, default), `connect-binary` or `grpc-web`. */
  protocol?: ClientProtocol | undefined;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch | undefined;
  /** Extra interceptors, run after the one that adds the headers. */
  interceptors?: Interceptor[] | undefined;
}

/**
 * How deep protobuf-es may recurse reading answers. The server accepts JSON values nested 128
 * levels (docs/api.md, "Input limits") and hands them back; protobuf-es counts up to one step per
 * level in JSON and two in binary (a Value holding a Struct), past its default of 100. The margins
 * match the server's own decoder settings.
 */
const RECURSION_LIMITS = { json: 128 + 8, binary: 2 * 128 + 16 } as const;

/** The transport `createClient` uses, with the auth headers added to every call. */
export function createTransport(options: TransportOptions): Transport {
  const headers: Interceptor = (next) => (req) => {
    if (options.apiKey) req.header.set("x-api-key", options.apiKey);
    if (options.tenantId) req.header.set("x-tenant-id", options.tenantId);
    return next(req);
  };
  const common = {
    baseUrl: options.baseUrl,
    interceptors: [headers, ...(options.interceptors ?? [])],
    jsonOptions: { recursionLimit: RECURSION_LIMITS.json },
    binaryOptions: { recursionLimit: RECURSION_LIMITS.binary },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  switch (options.protocol ?? "connect") {
    case "connect":
      return createConnectTransport(common);
    case "connect-binary":
      return createConnectTransport({ ...common, useBinaryFormat: true });
    case "grpc-web":
      return createGrpcWebTransport(common);
  }
}
