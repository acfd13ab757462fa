/**
 * The agentplane client: a typed client for every service, named by domain (`ap.agents.runs`,
 * `ap.tracing.runs`, `ap.tracingV2.runs`), over the Connect protocol (JSON or binary) or gRPC-Web,
 * both on `fetch`, so the same code runs in Node and in browsers. Where the API holds free-form
 * JSON (run input, state values, metadata, ...) callers pass and get plain values; event streams
 * yield `{id, event, data}` and resume after a dropped connection.
 *
 * ```ts
 * const ap = createClient({ baseUrl: "http://127.0.0.1:2024", apiKey: process.env.AGENTPLANE_API_KEY });
 * const { workspaces } = await ap.iam.workspaces.listWorkspaces();
 * ```
 *
 * The service table is generated from the protos (gen/sdk/services.ts, by sdk/codegen/).
 */
import type { DescService } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import { services } from "../gen/sdk/services.js";
import type { ReconnectOptions } from "./event-streams.js";
import { createServiceClient, type ServiceClient } from "./service-client.js";
import { createTransport, type TransportOptions } from "./transport.js";

export type { JsonObject, JsonValue } from "@bufbuild/protobuf";
export { type CallOptions, Code, ConnectError, type Transport } from "@connectrpc/connect";
export * from "../gen/sdk/packages.js";
export { services } from "../gen/sdk/services.js";
export type { ReconnectInfo, ReconnectOptions, StreamEvent } from "./event-streams.js";
export type * from "./langgraph-fields.js";
export type { Plain, PlainInit } from "./plain-json.js";
export type { ServiceClient, StreamItem } from "./service-client.js";
export { type ClientProtocol, createTransport, type TransportOptions } from "./transport.js";

/** Options of {@link createClient}. */
export interface ClientOptions extends TransportOptions {
  /**
   * How event streams (streamed and joined runs, thread streams) reconnect after a dropped
   * connection: by default up to 5 attempts in a row, 250 ms apart and doubling; false: never.
   */
  reconnect?: ReconnectOptions | false | undefined;
}

/** The service table's type. */
type Services = typeof services;

/** Typed clients for every agentplane service, by domain, and the transport they share. */
export type AgentplaneClient = {
  readonly [D in keyof Services]: {
    readonly [K in keyof Services[D]]: Services[D][K] extends DescService
      ? ServiceClient<Services[D][K]>
      : never;
  };
} & {
  /** The transport, for connect-es clients of the raw protobuf messages (`createClient` of `@connectrpc/connect`). */
  readonly transport: Transport;
};

/** Creates an {@link AgentplaneClient}. */
export function createClient(options: ClientOptions): AgentplaneClient {
  const transport = createTransport(options);
  const settings = { reconnect: options.reconnect ?? {} };
  const client: Record<string, unknown> = { transport };
  for (const [domain, table] of Object.entries(services))
    client[domain] = Object.fromEntries(
      Object.entries(table).map(([name, service]) => [
        name,
        createServiceClient(service as DescService, transport, settings),
      ]),
    );
  return client as AgentplaneClient;
}
