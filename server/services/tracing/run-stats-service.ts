import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { QueryRunsRequestSchema } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import type { RunStatsService } from "../../../gen/agentplane/tracing/v1/run_stats_service_pb.js";
import type { Sql } from "../../store/db.js";
import { findProjectIds } from "../../store/tracing/run-query-store.js";
import { runStats } from "../../store/tracing/run-stats-store.js";
import { inWorkspaceScope } from "../../store/tracing/workspace-scope.js";
import { authorizeWorkspace } from "../iam/principal.js";
import { invalid } from "../request-validation.js";
import { parseRunQuery } from "./run-query-request.js";

/** Dependencies of {@link createRunStatsService}. */
export interface RunStatsServiceDeps {
  sql: Sql;
}

/** The data source LangSmith's run stats default to; the only one agentplane has. */
const DATA_SOURCE = "current";

/**
 * RunStatsService: aggregates over the runs a QueryRuns request with the same conditions would
 * return (all of them, not a page). Needs `runs:read`; runs in a workspace scope of the caller's
 * workspace.
 */
export function createRunStatsService({ sql }: RunStatsServiceDeps): ServiceImpl<typeof RunStatsService> {
  return {
    async getRunStats(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      if (request.dataSourceType !== undefined && request.dataSourceType !== DATA_SOURCE)
        throw invalid(`data_source_type must be "${DATA_SOURCE}" (agentplane keeps one store of runs)`);
      const { dataSourceType: _, $typeName: __, ...conditions } = request;
      const { query } = parseRunQuery(create(QueryRunsRequestSchema, conditions), workspace.id);
      const row = await inWorkspaceScope(sql, [workspace.id], async (q) => {
        if (query.sessionIds.length > 0) {
          const found = new Set(await findProjectIds(q, workspace.id, query.sessionIds));
          const missing = query.sessionIds.find((id) => !found.has(id));
          if (missing) throw new ConnectError(`project ${missing} not found`, Code.NotFound);
        }
        return runStats(q, query);
      });
      const rate = (n: number) => (row.run_count === 0 ? 0 : n / row.run_count);
      return {
        runCount: row.run_count,
        latencyP50: row.latency_p50 ?? undefined,
        latencyP99: row.latency_p99 ?? undefined,
        firstTokenP50: row.first_token_p50 ?? undefined,
        firstTokenP99: row.first_token_p99 ?? undefined,
        totalTokens: Number(row.total_tokens ?? 0),
        promptTokens: Number(row.prompt_tokens ?? 0),
        completionTokens: Number(row.completion_tokens ?? 0),
        medianTokens: row.median_tokens ?? undefined,
        totalCost: row.total_cost ?? undefined,
        promptCost: row.prompt_cost ?? undefined,
        completionCost: row.completion_cost ?? undefined,
        lastRunStartTime:
          row.last_run_start_time === null ? undefined : timestampFromDate(new Date(row.last_run_start_time)),
        errorRate: rate(row.error_count),
        streamingRate: rate(row.streamed_count),
      };
    },
  };
}
