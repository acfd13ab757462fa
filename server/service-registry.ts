import { AssistantService } from "../gen/agentplane/agents/v1/assistant_service_pb.js";
import { CronService } from "../gen/agentplane/agents/v1/cron_service_pb.js";
import { RunService as AgentRunService } from "../gen/agentplane/agents/v1/run_service_pb.js";
import { StoreService } from "../gen/agentplane/agents/v1/store_service_pb.js";
import { ThreadService } from "../gen/agentplane/agents/v1/thread_service_pb.js";
import { ThreadStreamService } from "../gen/agentplane/agents/v1/thread_stream_service_pb.js";
import { BulkExportService } from "../gen/agentplane/export/v1/bulk_export_service_pb.js";
import { ApiKeyService } from "../gen/agentplane/iam/v1/api_key_service_pb.js";
import { IdentityService } from "../gen/agentplane/iam/v1/identity_service_pb.js";
import { MemberService } from "../gen/agentplane/iam/v1/member_service_pb.js";
import { WorkspaceService } from "../gen/agentplane/iam/v1/workspace_service_pb.js";
import { FeedbackService } from "../gen/agentplane/tracing/v1/feedback_service_pb.js";
import { FeedbackTokenService } from "../gen/agentplane/tracing/v1/feedback_token_service_pb.js";
import { ProjectService } from "../gen/agentplane/tracing/v1/project_service_pb.js";
import { RunService } from "../gen/agentplane/tracing/v1/run_service_pb.js";
import { RunStatsService } from "../gen/agentplane/tracing/v1/run_stats_service_pb.js";
import { UsageService } from "../gen/agentplane/tracing/v1/usage_service_pb.js";
import { RunService as V2RunService } from "../gen/agentplane/tracing/v2/run_service_pb.js";
import { ThreadService as V2ThreadService } from "../gen/agentplane/tracing/v2/thread_service_pb.js";
import { TraceService as V2TraceService } from "../gen/agentplane/tracing/v2/trace_service_pb.js";
import { TraceService as OtlpTraceService } from "../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { Clock } from "./clock.js";
import type { Config, RunSettings } from "./config.js";
import type { LocalRuns } from "./jobs/agent-run-job.js";
import type { JobRegistry } from "./jobs/job-registry.js";
import type { Queue } from "./jobs/queue.js";
import type { Logger } from "./logger.js";
import type { GraphRegistry } from "./runtime/graph-registry.js";
import type { RunEventBus } from "./runtime/run-event-bus.js";
import type { UiBundles } from "./runtime/ui-bundler.js";
import { createA2aService } from "./services/agents/a2a-service.js";
import { createAssistantInputSchemas } from "./services/agents/assistant-input-schemas.js";
import { createAssistantService } from "./services/agents/assistant-service.js";
import { createAssistantTools } from "./services/agents/assistant-tools.js";
import { createCronService } from "./services/agents/cron-service.js";
import { createGenerativeUi } from "./services/agents/generative-ui.js";
import { createRunLauncher } from "./services/agents/run-launcher.js";
import {
  createRunService as createAgentRunService,
  type RunServiceDeps,
  runCreationDepsOf,
} from "./services/agents/run-service.js";
import { createStoreService, type StoreServiceDeps } from "./services/agents/store-service.js";
import { createSystemAssistants } from "./services/agents/system-assistants.js";
import { createThreadGraphs } from "./services/agents/thread-graph.js";
import { createThreadService, type ThreadServiceDeps } from "./services/agents/thread-service.js";
import { createThreadStreamService } from "./services/agents/thread-stream/thread-stream-service.js";
import { createBulkExportService } from "./services/export/bulk-export-service.js";
import { createApiKeyService } from "./services/iam/api-key-service.js";
import type { Authenticator } from "./services/iam/authenticator.js";
import type { Identity } from "./services/iam/identity.js";
import type { IdentityCache } from "./services/iam/identity-cache.js";
import { createIdentityService } from "./services/iam/identity-service.js";
import { clearingIdentitiesAfterWrites } from "./services/iam/identity-writes.js";
import { createMemberService } from "./services/iam/member-service.js";
import { createWorkspaceService } from "./services/iam/workspace-service.js";
import { createFeedbackService } from "./services/tracing/feedback-service.js";
import { createFeedbackTokenService } from "./services/tracing/feedback-token-service.js";
import { createOtlpTraceService } from "./services/tracing/otlp-trace-service.js";
import { createProjectService } from "./services/tracing/project-service.js";
import { createRunService } from "./services/tracing/run-service.js";
import { createRunStatsService } from "./services/tracing/run-stats-service.js";
import { createUsageService } from "./services/tracing/usage-service.js";
import { createV2RunService } from "./services/tracing/v2-run-service.js";
import { createV2ThreadService } from "./services/tracing/v2-thread-service.js";
import { createV2TraceService } from "./services/tracing/v2-trace-service.js";
import { createThreadBatches } from "./store/batching/thread-batches.js";
import type { SecretBox } from "./store/crypto/secret-box.js";
import type { Sql } from "./store/db.js";
import type { IngestService } from "./tracing/ingest-service.js";
import { A2A_ROUTES, createA2aAdapter } from "./transport/a2a/a2a-adapter.js";
import { type BindOptions, type BoundService, bindService } from "./transport/bound-service.js";
import type { IgnoredFieldsSink } from "./transport/field-leniency.js";
import type { AdapterRoute, HttpAdapter } from "./transport/http-adapter.js";
import { createIndexAdapter, INDEX_ROUTES } from "./transport/index-adapter.js";
import { createIngestAdapter, INGEST_ROUTES } from "./transport/ingest/ingest-adapter.js";
import { createMcpAdapter, MCP_ROUTES } from "./transport/mcp/mcp-adapter.js";
import { createOtlpHttpAdapter, OTLP_HTTP_ROUTES } from "./transport/otlp/otlp-http-adapter.js";
import { decodeBinaryExportRequest } from "./transport/otlp/otlp-request.js";
import { otlpSpanScreen } from "./transport/otlp/otlp-span-screen.js";
import { createOutOfScopeAdapter, OUT_OF_SCOPE_ROUTES } from "./transport/out-of-scope-adapter.js";
import { createUiAdapter, UI_ROUTES } from "./transport/ui-adapter.js";
import { createUsageExportAdapter, USAGE_EXPORT_ROUTES } from "./transport/usage-export-adapter.js";
import { createUsagePageAdapter, USAGE_PAGE_ROUTES } from "./transport/usage-page-adapter.js";

/** What the API services are built from. */
export interface ServiceDeps {
  readonly config: Config;
  readonly sql: Sql;
  readonly queue: Queue;
  readonly jobs: JobRegistry;
  readonly log: Logger;
  /** The graphs this process serves (from the graph config file, or the bundled example). */
  readonly graphs: GraphRegistry;
  /** Trace ingest (the REST ingest routes and in-process callers share it). */
  readonly ingest: IngestService;
  /** agentplane's version (package.json). */
  readonly version: string;
  /** The credentials the authenticator keeps; the IAM services clear it after every change. */
  readonly identities: IdentityCache<Identity>;
  /** Seals bulk-export destination credentials. */
  readonly secrets: SecretBox;
  /** Fans run events and cancels out to this process. */
  readonly runBus: RunEventBus;
  /** How runs execute and stream. */
  readonly runSettings: RunSettings;
  /** This process's run worker when it executes runs (roles all and worker). */
  readonly localRuns?: LocalRuns;
  /** Where calendar-driven work (cron schedules) reads the time. */
  readonly clock: Clock;
  /** The graphs file's generative-UI bundles, built at start. */
  readonly uiBundles: UiBundles;
  /** Where the A2A and MCP adapters report the request members they ignored (field-leniency.ts). */
  readonly ignoredFields?: IgnoredFieldsSink;
}

/**
 * Every authenticated API service, bound with the guard and error policy. The one list a new
 * service is added to; the composition root serves them on every protocol.
 */
export function createApiServices(
  deps: ServiceDeps,
  bind: Required<Pick<BindOptions, "guard">> & BindOptions,
): BoundService[] {
  const { sql, queue, jobs, graphs, identities } = deps;
  const systemAssistants = systemAssistantsOf(deps);
  const runServiceDeps: RunServiceDeps = {
    sql,
    graphs,
    systemAssistants,
    queue: () => queue,
    runJob: () => jobs.agentRun,
    bus: deps.runBus,
    settings: deps.runSettings,
    webhooks: deps.config.webhooks,
    webhookJob: () => jobs.webhookDelivery,
    ...(deps.localRuns ? { localRuns: deps.localRuns } : {}),
  };
  const threadService = createThreadService({
    sql,
    threadGraphs: createThreadGraphs({ sql, graphs }),
    ...defaultThreadTtlOption(graphs),
  });
  return [
    bindService(IdentityService, createIdentityService(), bind),
    bindService(
      WorkspaceService,
      clearingIdentitiesAfterWrites(
        createWorkspaceService({ sql, queue, purgeJob: jobs.workspacePurge }),
        identities,
      ),
      bind,
    ),
    bindService(ApiKeyService, clearingIdentitiesAfterWrites(createApiKeyService({ sql }), identities), bind),
    bindService(MemberService, clearingIdentitiesAfterWrites(createMemberService({ sql }), identities), bind),
    bindService(AssistantService, createAssistantService({ sql, graphs, systemAssistants }), bind),
    bindService(AgentRunService, createAgentRunService(runServiceDeps), bind),
    bindService(
      ThreadStreamService,
      createThreadStreamService({
        sql,
        log: deps.log,
        creation: runCreationDepsOf(runServiceDeps),
        threads: createThreadBatches(sql),
        threadService,
        readers: { sql, bus: deps.runBus, ...(deps.localRuns ? { localRuns: deps.localRuns } : {}) },
      }),
      bind,
    ),
    bindService(
      CronService,
      createCronService({
        sql,
        systemAssistants,
        graphIds: () => graphs.ids(),
        clock: deps.clock,
        webhooks: deps.config.webhooks,
      }),
      bind,
    ),
    bindService(UsageService, createUsageService({ sql }), bind),
    bindService(RunService, createRunService({ sql }), bind),
    bindService(V2RunService, createV2RunService({ sql }), bind),
    bindService(V2TraceService, createV2TraceService({ sql }), bind),
    bindService(V2ThreadService, createV2ThreadService({ sql }), bind),
    bindService(ProjectService, createProjectService({ sql }), bind),
    bindService(FeedbackService, createFeedbackService({ sql }), bind),
    // The presigned token is the credential: no API-key guard (the database gate still applies).
    bindService(FeedbackTokenService, createFeedbackTokenService({ sql }), { ...bind, guard: undefined }),
    bindService(
      OtlpTraceService,
      createOtlpTraceService({ ingest: deps.ingest, screen: otlpSpanScreen }),
      bind,
      // OTel exporters' gRPC calls are decoded by hand, and their spans screened one by one.
      { export: decodeBinaryExportRequest },
    ),
    bindService(RunStatsService, createRunStatsService({ sql }), bind),
    bindService(
      BulkExportService,
      createBulkExportService({
        sql,
        secrets: deps.secrets,
        queue: () => queue,
        runJob: () => jobs.bulkExportRun,
        settings: deps.config.bulkExport,
      }),
      bind,
    ),
    bindService(StoreService, createStoreService({ sql, ...storeTtlOption(graphs) }), bind),
    bindService(ThreadService, threadService, bind),
  ];
}

/** A REST-only adapter: the routes it declares, and how to build it. */
export interface RestAdapterDefinition {
  readonly routes: readonly AdapterRoute[];
  /** Left out of the OpenAPI document: routes that only say an area is not served. */
  readonly undocumented?: boolean;
  create(deps: ServiceDeps, auth: Authenticator): HttpAdapter;
}

/**
 * The REST-only routes of the API (for what is not an RPC: multipart uploads, file downloads, web
 * pages), matched in order before the REST transcoder. The one list a new adapter is added to; the
 * fuzz test (test/e2e/malformed-input.test.ts) reads the routes from here.
 */
export const REST_ADAPTERS: readonly RestAdapterDefinition[] = [
  { routes: USAGE_EXPORT_ROUTES, create: (deps, auth) => createUsageExportAdapter({ sql: deps.sql, auth }) },
  { routes: USAGE_PAGE_ROUTES, create: () => createUsagePageAdapter() },
  { routes: INDEX_ROUTES, create: (deps) => createIndexAdapter(deps.version) },
  {
    routes: INGEST_ROUTES,
    create: (deps, auth) => createIngestAdapter({ ingest: deps.ingest, auth }),
  },
  {
    routes: OTLP_HTTP_ROUTES,
    create: (deps, auth) => createOtlpHttpAdapter({ ingest: deps.ingest, auth }),
  },
  { routes: OUT_OF_SCOPE_ROUTES, undocumented: true, create: () => createOutOfScopeAdapter() },
  {
    routes: A2A_ROUTES,
    create: (deps, auth) => {
      if (deps.graphs.settings.http.disableA2a) return [];
      const agents = agentProtocolDeps(deps);
      return createA2aAdapter({
        auth,
        a2a: createA2aService({ sql: deps.sql, graphs: deps.graphs, ...agents }),
        launcher: agents.launcher,
        log: deps.log,
        ...(deps.ignoredFields ? { ignoredFields: deps.ignoredFields } : {}),
      });
    },
  },
  {
    routes: MCP_ROUTES,
    create: (deps, auth) => {
      if (deps.graphs.settings.http.disableMcp) return [];
      const tools = createAssistantTools({ sql: deps.sql, graphs: deps.graphs, ...agentProtocolDeps(deps) });
      return createMcpAdapter({ auth, tools, version: deps.version, log: deps.log });
    },
  },
  {
    routes: UI_ROUTES,
    create: (deps, auth) => {
      const { sql, graphs } = deps;
      const graphIds = () => graphs.ids();
      const systemAssistants = systemAssistantsOf(deps);
      const ui = createGenerativeUi({ sql, systemAssistants, graphIds, bundles: deps.uiBundles });
      return createUiAdapter({
        ui,
        auth,
        ...(deps.ignoredFields ? { ignoredFields: deps.ignoredFields } : {}),
      });
    },
  },
];

/** The system-assistant cache of each server's deps. */
const systemAssistantCaches = new WeakMap<ServiceDeps, ReturnType<typeof createSystemAssistants>>();

/**
 * One system-assistant cache per server, shared by the RPC services, A2A, MCP and generative UI:
 * every one that resolves graph ids to system assistants.
 */
function systemAssistantsOf(deps: ServiceDeps): ReturnType<typeof createSystemAssistants> {
  let cache = systemAssistantCaches.get(deps);
  if (!cache) {
    cache = createSystemAssistants({ sql: deps.sql, graphs: deps.graphs });
    systemAssistantCaches.set(deps, cache);
  }
  return cache;
}

/** What the A2A and MCP adapters start runs with, built once per server so they share its caches. */
const agentProtocols = new WeakMap<ServiceDeps, ReturnType<typeof buildAgentProtocolDeps>>();

/** What the A2A and MCP adapters start runs with: the run service's machinery, for their workspace. */
function agentProtocolDeps(deps: ServiceDeps): ReturnType<typeof buildAgentProtocolDeps> {
  let built = agentProtocols.get(deps);
  if (!built) {
    built = buildAgentProtocolDeps(deps);
    agentProtocols.set(deps, built);
  }
  return built;
}

/** The system assistants, run launcher and input-schema cache of {@link agentProtocolDeps}. */
function buildAgentProtocolDeps(deps: ServiceDeps) {
  const { sql, graphs } = deps;
  const systemAssistants = systemAssistantsOf(deps);
  const launcher = createRunLauncher({
    sql,
    graphs,
    systemAssistants,
    queue: () => deps.queue,
    runJob: () => deps.jobs.agentRun,
    bus: deps.runBus,
    settings: deps.runSettings,
    webhooks: deps.config.webhooks,
    webhookJob: () => deps.jobs.webhookDelivery,
    ...(deps.localRuns ? { localRuns: deps.localRuns } : {}),
  });
  return { systemAssistants, launcher, inputSchemas: createAssistantInputSchemas(graphs) };
}

/** Every adapter of {@link REST_ADAPTERS}, built. */
export function createRestAdapters(deps: ServiceDeps, auth: Authenticator): HttpAdapter[] {
  return REST_ADAPTERS.map((adapter) => adapter.create(deps, auth));
}

/** The graphs file's `store.ttl`, when it has one, as the store service's option. */
function storeTtlOption(graphs: GraphRegistry): Pick<StoreServiceDeps, "ttl"> {
  const ttl = graphs.settings.store.ttl;
  return ttl ? { ttl } : {};
}

/** The graphs file's `checkpointer.ttl`, when it sets a `default_ttl`, as threads' default TTL. */
function defaultThreadTtlOption(graphs: GraphRegistry): Pick<ThreadServiceDeps, "defaultTtl"> {
  const ttl = graphs.settings.checkpointer.ttl;
  return ttl?.defaultTtlMinutes === undefined
    ? {}
    : { defaultTtl: { strategy: ttl.strategy, minutes: ttl.defaultTtlMinutes } };
}
