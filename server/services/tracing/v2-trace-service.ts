import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type {
  TraceAggregatesSchema,
  TraceService,
} from "../../../gen/agentplane/tracing/v2/trace_service_pb.js";
import { type Clock, systemClock } from "../../clock.js";
import type { Sql } from "../../store/db.js";
import { queryRuns, type RunQuery } from "../../store/tracing/run-query-store.js";
import { findTraceTotals, type TraceTotals } from "../../store/tracing/trace-totals-store.js";
import { inWorkspaceScope } from "../../store/tracing/workspace-scope.js";
import { authorizeWorkspace } from "../iam/principal.js";
import { invalid } from "../request-validation.js";
import { decodeRunCursor, encodeRunCursor } from "./run-cursor.js";
import { decimal, timestamp } from "./run-message.js";
import { runFilterParameter, uuidOf } from "./run-query-request.js";
import { pageSize, requiredUuid, requireProject, timeWindow } from "./v2-request.js";
import { jsonColumnsOf, selectedV2Fields } from "./v2-run-fields.js";
import { v2RowColumns, v2RunEncoder } from "./v2-run-message.js";

/** The `selects` values that go to `trace_aggregates` rather than to the root run. */
const AGGREGATE_SELECTS = new Set(["TOTAL_TOKENS", "TOTAL_COST", "FIRST_TOKEN_TIME"]);

/** Most runs one trace answers in one response: far beyond any real trace, bounded for memory. */
const MAX_TRACE_RUNS = 10_000;

/** Dependencies of {@link createV2TraceService}. */
export interface V2TraceServiceDeps {
  sql: Sql;
  /** What the default time windows are measured from. */
  clock?: Clock;
}

/**
 * The v2 TraceService (`/api/v2/traces/...`): query the traces of a project (root run plus
 * trace-wide totals), list the runs of one trace. Needs `runs:read`; every query is scoped to the
 * selected workspace in SQL and by row-level security.
 */
export function createV2TraceService({
  sql,
  clock = systemClock,
}: V2TraceServiceDeps): ServiceImpl<typeof TraceService> {
  return {
    async queryTraces(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const projectId = requiredUuid("project_id", request.projectId);
      const window = timeWindow(request.minStartTime, request.maxStartTime, clock.now());
      const upper = request.selects.map((s) => s.toUpperCase());
      const rootFields = selectedV2Fields(upper.filter((s) => !AGGREGATE_SELECTS.has(s)));
      const aggregates = upper.filter((s) => AGGREGATE_SELECTS.has(s));
      const query: RunQuery = {
        workspaceId: workspace.id,
        sessionIds: [projectId],
        ids: request.traceIds.map((id, i) => uuidOf(`trace_ids[${i}]`, id)),
        referenceExampleIds: [],
        isRoot: true,
        startTime: window.min,
        startedBefore: window.max,
        conditions: [],
        traceCondition: runFilterParameter("trace_filter", request.traceFilter),
        treeCondition: runFilterParameter("tree_filter", request.treeFilter),
        order: "desc",
        limit: pageSize(request.pageSize),
        after: request.cursor ? decodeRunCursor(request.cursor) : undefined,
        json: jsonColumnsOf(rootFields),
        // The page's trace ids look up the trace totals.
        columns: new Set([...v2RowColumns(rootFields), "trace_id"]),
      };
      const { rows, totals } = await inWorkspaceScope(sql, [workspace.id], async (q) => {
        await requireProject(q, workspace.id, projectId);
        const rows = await queryRuns(q, query);
        const page = rows.slice(0, query.limit).map((r) => r.trace_id);
        const totals = aggregates.length > 0 ? await findTraceTotals(q, workspace.id, page) : new Map();
        return { rows, totals };
      });
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      const more = rows.length > query.limit && last !== undefined;
      const rootRun = v2RunEncoder(rootFields);
      return {
        items: page.map((row) => ({
          rootRun: rootRun(row),
          ...(aggregates.length > 0
            ? { traceAggregates: aggregatesOf(totals.get(row.trace_id), aggregates) }
            : {}),
        })),
        ...(more ? { nextCursor: encodeRunCursor({ startTime: last.start_time, id: last.id }) } : {}),
      };
    },

    async listTraceRuns(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const traceId = uuidOf("trace_id", request.traceId);
      const projectId = requiredUuid("project_id", request.projectId);
      if ((request.minStartTime === undefined) !== (request.maxStartTime === undefined)) {
        throw invalid("min_start_time and max_start_time go together: send both or neither");
      }
      const fields = selectedV2Fields(request.selects);
      const filter = runFilterParameter("filter", request.filter);
      const query: RunQuery = {
        workspaceId: workspace.id,
        sessionIds: [projectId],
        ids: [],
        referenceExampleIds: [],
        traceId,
        startTime: request.minStartTime ? timestampDate(request.minStartTime) : undefined,
        endTime: request.maxStartTime ? timestampDate(request.maxStartTime) : undefined,
        conditions: filter ? [filter] : [],
        order: "asc",
        limit: MAX_TRACE_RUNS,
        json: jsonColumnsOf(fields),
        columns: v2RowColumns(fields),
      };
      const rows = await inWorkspaceScope(sql, [workspace.id], async (q) => {
        await requireProject(q, workspace.id, projectId);
        return queryRuns(q, query);
      });
      if (rows.length > MAX_TRACE_RUNS) {
        throw new ConnectError(
          `trace ${traceId} has more than ${MAX_TRACE_RUNS} runs: narrow it with filter or a time window`,
          Code.ResourceExhausted,
        );
      }
      return { items: rows.map(v2RunEncoder(fields)) };
    },
  };
}

/** The selected trace aggregates of a trace's totals; a measure the trace lacks stays unset. */
function aggregatesOf(
  totals: TraceTotals | undefined,
  selects: readonly string[],
): MessageInitShape<typeof TraceAggregatesSchema> {
  const aggregates: MessageInitShape<typeof TraceAggregatesSchema> = {};
  if (!totals) return aggregates;
  if (selects.includes("TOTAL_TOKENS")) aggregates.totalTokens = decimal(totals.total_tokens);
  if (selects.includes("TOTAL_COST")) aggregates.totalCost = decimal(totals.total_cost);
  if (selects.includes("FIRST_TOKEN_TIME")) aggregates.firstTokenTime = timestamp(totals.first_token_time);
  return aggregates;
}
