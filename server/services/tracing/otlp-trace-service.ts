/**
 * OTLP trace export (`opentelemetry.proto.collector.trace.v1.TraceService/Export`): what every
 * OpenTelemetry exporter sends, over OTLP/gRPC (this service, through Connect) and OTLP/HTTP
 * (transport/otlp/otlp-http-adapter.ts, which calls {@link exportTraces}). Spans become runs as
 * LangSmith maps them (tracing/otlp/); the tracing project is the `Langsmith-Project` header's
 * (created on first use), the agent project of the `Langsmith-Agent-Id` and
 * `Langsmith-Agent-Environment` headers, or `default`, unless a span names its own.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type ExportTraceServiceRequest,
  type ExportTraceServiceResponse,
  ExportTraceServiceResponseSchema,
  type TraceService,
} from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { JsonTexts } from "../../store/json-text.js";
import { agentProject } from "../../tracing/agent-address.js";
import type { IngestActor, IngestService } from "../../tracing/ingest-service.js";
import { draftOfSpan, type SpanDraft, spanOrigin } from "../../tracing/otlp/span-draft.js";
import type { SpanReading, SpanScreen } from "../../tracing/otlp/span-screen.js";
import { DEFAULT_PROJECT_NAME, MAX_PROJECT_NAME } from "../../tracing/run-normalizer.js";
import { authorizedWorkspace, type Principal, principalOf } from "../iam/principal.js";

/** Dependencies of {@link createOtlpTraceService}. */
export interface OtlpTraceServiceDeps {
  ingest: IngestService;
  /** The decoding layer's screens, which judge each span's values (tracing/otlp/span-screen.ts). */
  screen: SpanScreen;
}

/** Most refusals an answer's error_message names, so that it stays one readable line. */
const MAX_NAMED_REFUSALS = 3;

/** The TraceService implementation: the caller needs `runs:create` in its workspace. */
export function createOtlpTraceService(deps: OtlpTraceServiceDeps): ServiceImpl<typeof TraceService> {
  return {
    async export(request, ctx) {
      return exportTraces(deps, principalOf(ctx), ctx.requestHeader, request);
    },
  };
}

/**
 * Stores an export's spans for `principal` (who must hold `runs:create`): every span that maps to
 * a run is stored, in one transaction; the answer's `partial_success` counts and names the spans
 * refused (ids that are not valid, times out of range, a value that cannot be stored, a project id
 * the workspace has not, ...).
 */
export async function exportTraces(
  { ingest, screen }: OtlpTraceServiceDeps,
  principal: Principal,
  headers: Headers,
  request: ExportTraceServiceRequest,
): Promise<ExportTraceServiceResponse> {
  const workspace = await authorizedWorkspace(principal, "runs:create");
  const actor: IngestActor = {
    workspaceId: workspace.id,
    userId: principal.user?.id ?? null,
    apiKeyId: principal.apiKey?.id ?? null,
  };
  const project = projectOfHeaders(headers);
  const reading: SpanReading = { screen, texts: new JsonTexts(), defaultProject: project };
  const drafts: SpanDraft[] = [];
  const refused: string[] = [];
  for (const resourceSpans of request.resourceSpans) {
    for (const scopeSpans of resourceSpans.scopeSpans) {
      const origin = spanOrigin(resourceSpans.resource, scopeSpans.scope, reading);
      for (const span of scopeSpans.spans) {
        const draft = draftOfSpan(span, origin, reading);
        if ("rejected" in draft)
          refused.push(`span ${Buffer.from(span.spanId).toString("hex") || "(no id)"}: ${draft.rejected}`);
        else drafts.push(draft);
      }
    }
  }
  if (drafts.length > 0) {
    const { rejected } = await ingest.ingestSpans(actor, { drafts, texts: reading.texts });
    for (const { runId, reason } of rejected)
      refused.push(`span ${runId.replaceAll("-", "").slice(16)}: ${reason}`);
  }
  if (refused.length === 0) return create(ExportTraceServiceResponseSchema, {});
  const named = refused.slice(0, MAX_NAMED_REFUSALS).join("; ");
  const more = refused.length > MAX_NAMED_REFUSALS ? `; and ${refused.length - MAX_NAMED_REFUSALS} more` : "";
  return create(ExportTraceServiceResponseSchema, {
    partialSuccess: { rejectedSpans: BigInt(refused.length), errorMessage: `${named}${more}` },
  });
}

/** The project of spans that name none, from the request's headers. */
function projectOfHeaders(headers: Headers): string {
  const project = headers.get("langsmith-project")?.trim();
  if (project) {
    if (project.length > MAX_PROJECT_NAME)
      throw new ConnectError(
        `the Langsmith-Project header must be at most ${MAX_PROJECT_NAME} characters`,
        Code.InvalidArgument,
      );
    return project;
  }
  const agentId = headers.get("langsmith-agent-id")?.trim();
  const environment = headers.get("langsmith-agent-environment")?.trim();
  if (agentId || environment) {
    if (!agentId || !environment)
      throw new ConnectError(
        "send both Langsmith-Agent-Id and Langsmith-Agent-Environment to address an agent, or neither",
        Code.InvalidArgument,
      );
    const agent = agentProject(agentId, environment);
    if ("error" in agent) throw new ConnectError(agent.error, Code.InvalidArgument);
    return agent.name;
  }
  return DEFAULT_PROJECT_NAME;
}
