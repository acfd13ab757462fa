/**
 * The agentplane client: typed clients for every service, over the Connect protocol (JSON or binary)
 * or gRPC-Web, both on `fetch`, so the same code runs in Node and in browsers.
 *
 * ```ts
 * const ap = createClient({ baseUrl: "http://127.0.0.1:2024", apiKey: process.env.AGENTPLANE_API_KEY });
 * const { workspaces } = await ap.workspaces.listWorkspaces({});
 * ```
 */
import type { DescService } from "@bufbuild/protobuf";
import {
  type Client,
  createClient as createServiceClient,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { AssistantService } from "../gen/agentplane/agents/v1/assistant_service_pb.js";
import { CronService } from "../gen/agentplane/agents/v1/cron_service_pb.js";
import { StoreService } from "../gen/agentplane/agents/v1/store_service_pb.js";
import { ThreadService } from "../gen/agentplane/agents/v1/thread_service_pb.js";
import { BulkExportService } from "../gen/agentplane/export/v1/bulk_export_service_pb.js";
import { ApiKeyService } from "../gen/agentplane/iam/v1/api_key_service_pb.js";
import { IdentityService } from "../gen/agentplane/iam/v1/identity_service_pb.js";
import { MemberService } from "../gen/agentplane/iam/v1/member_service_pb.js";
import { WorkspaceService } from "../gen/agentplane/iam/v1/workspace_service_pb.js";
import { SystemService } from "../gen/agentplane/system/v1/system_service_pb.js";
import { ProjectService } from "../gen/agentplane/tracing/v1/project_service_pb.js";
import { RunService } from "../gen/agentplane/tracing/v1/run_service_pb.js";
import { UsageService } from "../gen/agentplane/tracing/v1/usage_service_pb.js";

export { Code, ConnectError } from "@connectrpc/connect";
export * from "../gen/agentplane/agents/v1/assistant_service_pb.js";
export * from "../gen/agentplane/agents/v1/cron_service_pb.js";
export * from "../gen/agentplane/agents/v1/store_service_pb.js";
export * from "../gen/agentplane/agents/v1/thread_service_pb.js";
export * from "../gen/agentplane/export/v1/bulk_export_service_pb.js";
export * from "../gen/agentplane/iam/v1/api_key_service_pb.js";
export * from "../gen/agentplane/iam/v1/iam_pb.js";
export * from "../gen/agentplane/iam/v1/identity_service_pb.js";
export * from "../gen/agentplane/iam/v1/member_service_pb.js";
export * from "../gen/agentplane/iam/v1/workspace_service_pb.js";
export * from "../gen/agentplane/system/v1/system_service_pb.js";
export * from "../gen/agentplane/tracing/v1/project_service_pb.js";
export * from "../gen/agentplane/tracing/v1/run_service_pb.js";
export * from "../gen/agentplane/tracing/v1/usage_service_pb.js";

/** Wire protocols the client can speak. */
export type ClientProtocol = "connect" | "connect-binary" | "grpc-web";

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** Server address, such as `http://127.0.0.1:2024`. */
  baseUrl: string;
  /** Sent as `x-api-key` on every call. */
  apiKey?: string;
  /** Workspace id sent as `x-tenant-id` on every call; a personal key falls back to its default. */
  tenantId?: string;
  /** `connect` (JSON, default), `connect-binary` or `grpc-web`. */
  protocol?: ClientProtocol;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
  /** Extra interceptors, run after the one that adds the headers. */
  interceptors?: Interceptor[];
}

/** Typed clients for every agentplane service. */
export interface AgentplaneClient {
  /** Liveness, readiness and server information. */
  readonly system: Client<typeof SystemService>;
  /** Who the caller is. */
  readonly identity: Client<typeof IdentityService>;
  /** Workspaces of the caller's organization. */
  readonly workspaces: Client<typeof WorkspaceService>;
  /** API keys. */
  readonly apiKeys: Client<typeof ApiKeyService>;
  /** Members of the organization and of the current workspace. */
  readonly members: Client<typeof MemberService>;
  /** Assistants of the Agent Server (the LangGraph assistants API). */
  readonly assistants: Client<typeof AssistantService>;
  /** Threads of the Agent Server: their state, history and checkpoints. */
  readonly threads: Client<typeof ThreadService>;
  /** The Agent Server's cross-thread key-value store. */
  readonly store: Client<typeof StoreService>;
  /** Crons of the Agent Server: runs created on a schedule. */
  readonly crons: Client<typeof CronService>;
  /** Tracing projects. */
  readonly projects: Client<typeof ProjectService>;
  /** Trace runs: read, query with filters, validate filters. */
  readonly runs: Client<typeof RunService>;
  /** Granular usage: traces per time bucket by workspace, project, user or API key. */
  readonly usage: Client<typeof UsageService>;
  /** Bulk export: S3 destinations, one-off and scheduled exports of trace runs, and their runs. */
  readonly bulkExports: Client<typeof BulkExportService>;
  /** The transport, to build clients of services this object does not list. */
  readonly transport: Transport;
}

/** Creates an {@link AgentplaneClient}. */
export function createClient(options: ClientOptions): AgentplaneClient {
  const transport = createTransport(options);
  const client = <S extends DescService>(service: S) => createServiceClient(service, transport);
  return {
    system: client(SystemService),
    identity: client(IdentityService),
    workspaces: client(WorkspaceService),
    apiKeys: client(ApiKeyService),
    members: client(MemberService),
    assistants: client(AssistantService),
    threads: client(ThreadService),
    store: client(StoreService),
    crons: client(CronService),
    projects: client(ProjectService),
    runs: client(RunService),
    usage: client(UsageService),
    bulkExports: client(BulkExportService),
    transport,
  };
}

/**
 * How deep protobuf-es may recurse reading answers. The server accepts JSON values nested 128
 * levels (README, "Input limits") and hands them back; protobuf-es counts up to one step per level
 * in JSON and two in binary (a Value holding a Struct), past its default of 100. The margins match
 * the server's own decoder settings.
 */
const RECURSION_LIMITS = { json: 128 + 8, binary: 2 * 128 + 16 } as const;

/** The transport {@link createClient} uses, with the auth headers added to every call. */
export function createTransport(options: ClientOptions): Transport {
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
