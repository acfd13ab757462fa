import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { ThreadService } from "../../../gen/agentplane/tracing/v2/thread_service_pb.js";
import { type Clock, systemClock } from "../../clock.js";
import { findThreadStats, queryThreads } from "../../store/agents/thread-read-store.js";
import type { Sql } from "../../store/db.js";
import type { ColumnField } from "../../store/filters/filter-fields.js";
import { queryRuns, type RunQuery } from "../../store/tracing/run-query-store.js";
import { findTraceTotals, type TraceTotals } from "../../store/tracing/trace-totals-store.js";
import { inWorkspaceScope } from "../../store/tracing/workspace-scope.js";
import { FILTER_FIELDS, type RunCondition } from "../../tracing/filter/index.js";
import { authorizeWorkspace } from "../iam/principal.js";
import { invalid } from "../request-validation.js";
import { decodeRunCursor, encodeRunCursor } from "./run-cursor.js";
import { timestamp } from "./run-message.js";
import { runFilterParameter } from "./run-query-request.js";
import { decodeThreadCursor, encodeThreadCursor } from "./thread-cursor.js";
import { pageSize, requiredUuid, requireProject, timeWindow } from "./v2-request.js";
import { selectedStats, selectedThreadTraceFields, threadTraceMessage } from "./v2-thread-fields.js";

/** Longest thread id accepted: thread ids are UUIDs or short client keys. */
const MAX_THREAD_ID_LENGTH = 1_000;

/** Dependencies of {@link createV2ThreadService}. */
export interface V2ThreadServiceDeps {
  sql: Sql;
  /** What the default time windows are measured from. */
  clock?: Clock;
}

/**
 * The v2 ThreadService (`/api/v2/threads/...`): query the conversation threads of a project, list
 * a thread's traces, and total a thread. Needs `runs:read`; every query is scoped to the selected
 * workspace in SQL and by row-level security.
 */
export function createV2ThreadService({
  sql,
  clock = systemClock,
}: V2ThreadServiceDeps): ServiceImpl<typeof ThreadService> {
  return {
    async queryThreads(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      if (request.threadFilter !== undefined && request.threadFilter.trim() !== "") {
        throw invalid(
          "thread_filter is not supported by agentplane: filter the traces with filter, trace_filter or tree_filter",
        );
      }
      const projectId = requiredUuid("project_id", request.projectId);
      const window = timeWindow(request.minStartTime, request.maxStartTime, clock.now());
      const query = {
        workspaceId: workspace.id,
        projectId,
        minStartTime: window.min,
        startedBefore: window.max,
        condition: runFilterParameter("filter", request.filter),
        traceCondition: runFilterParameter("trace_filter", request.traceFilter),
        treeCondition: runFilterParameter("tree_filter", request.treeFilter),
        limit: pageSize(request.pageSize),
        after: request.cursor ? decodeThreadCursor(request.cursor) : undefined,
      };
      const { rows, totals } = await inWorkspaceScope(sql, [workspace.id], async (q) => {
        await requireProject(q, workspace.id, projectId);
        const rows = await queryThreads(q, query);
        const traceIds = rows.slice(0, query.limit).flatMap((r) => r.trace_ids);
        return { rows, totals: await findTraceTotals(q, workspace.id, traceIds) };
      });
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      const more = rows.length > query.limit && last !== undefined;
      return {
        items: page.map((row) => {
          const traces = row.trace_ids.map((id) => totals.get(id)).filter((t) => t !== undefined);
          return {
            threadId: row.thread_id,
            count: row.count,
            minStartTime: timestamp(row.min_start_time),
            maxStartTime: timestamp(row.max_start_time),
            startTime: timestamp(row.max_start_time),
            firstTraceId: row.first_trace_id,
            lastTraceId: row.last_trace_id,
            latencyP50: row.latency_p50 ?? undefined,
            latencyP99: row.latency_p99 ?? undefined,
            totalTokens: sumOf(traces, "total_tokens"),
            totalCost: sumOf(traces, "total_cost"),
            numErroredTurns: row.num_errored_turns,
            lastError: row.last_error ?? undefined,
          };
        }),
        ...(more
          ? {
              nextCursor: encodeThreadCursor({
                maxStartTime: last.max_start_time,
                lastTraceId: last.last_trace_id,
              }),
            }
          : {}),
      };
    },

    async listThreadTraces(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const threadId = threadIdOf(request.threadId);
      const projectId = requiredUuid("project_id", request.projectId);
      const fields = selectedThreadTraceFields(request.selects);
      const filter = runFilterParameter("filter", request.filter);
      const query: RunQuery = {
        workspaceId: workspace.id,
        sessionIds: [projectId],
        ids: [],
        referenceExampleIds: [],
        isRoot: true,
        conditions: [inThread(threadId), ...(filter ? [filter] : [])],
        order: "asc",
        limit: pageSize(request.pageSize),
        after: request.cursor ? decodeRunCursor(request.cursor) : undefined,
        json: new Set([
          ...(fields.has("inputs") ? ["inputs" as const] : []),
          ...(fields.has("outputs") ? ["outputs" as const] : []),
        ]),
      };
      const { rows, totals } = await inWorkspaceScope(sql, [workspace.id], async (q) => {
        await requireProject(q, workspace.id, projectId);
        const rows = await queryRuns(q, query);
        const ids = rows.slice(0, query.limit).map((r) => r.trace_id);
        return { rows, totals: await findTraceTotals(q, workspace.id, ids) };
      });
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      const more = rows.length > query.limit && last !== undefined;
      return {
        items: page.map((row) => threadTraceMessage(row, totals.get(row.trace_id), fields)),
        ...(more ? { nextCursor: encodeRunCursor({ startTime: last.start_time, id: last.id }) } : {}),
      };
    },

    async getThreadStats(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const threadId = threadIdOf(request.threadId);
      const projectId = requiredUuid("session_id", request.sessionId);
      const selects = selectedStats(request.selects);
      const condition = runFilterParameter("filter", request.filter);
      const { stats, totals } = await inWorkspaceScope(sql, [workspace.id], async (q) => {
        await requireProject(q, workspace.id, projectId);
        const stats = await findThreadStats(q, workspace.id, projectId, threadId, condition);
        return { stats, totals: [...(await findTraceTotals(q, workspace.id, stats.trace_ids)).values()] };
      });
      if (stats.turns === 0) {
        throw new ConnectError(
          `thread ${JSON.stringify(threadId)} not found in project ${projectId}`,
          Code.NotFound,
        );
      }
      const all = {
        turns: stats.turns,
        firstStartTime: timestamp(stats.first_start_time),
        lastStartTime: timestamp(stats.last_start_time),
        lastEndTime: timestamp(stats.last_end_time),
        latencyP50Seconds: stats.latency_p50 ?? undefined,
        latencyP99Seconds: stats.latency_p99 ?? undefined,
        totalTokens: sumOf(totals, "total_tokens"),
        promptTokens: sumOf(totals, "prompt_tokens"),
        completionTokens: sumOf(totals, "completion_tokens"),
        totalCost: sumOf(totals, "total_cost"),
        promptCost: sumOf(totals, "prompt_cost"),
        completionCost: sumOf(totals, "completion_cost"),
      };
      return Object.fromEntries(Object.entries(all).filter(([key]) => selects.has(key as keyof typeof all)));
    },
  };
}

/** A thread id from the path: non-empty text of bounded length. */
function threadIdOf(value: string): string {
  if (value === "") throw invalid("thread_id is required");
  if (value.length > MAX_THREAD_ID_LENGTH) {
    throw invalid(`thread_id is longer than ${MAX_THREAD_ID_LENGTH} characters`);
  }
  return value;
}

/** The condition "the run belongs to thread `threadId`", as the filter `eq(thread_id, "...")`. */
function inThread(threadId: string): RunCondition {
  return {
    kind: "compare",
    field: FILTER_FIELDS.get("thread_id") as ColumnField,
    operator: "eq",
    value: threadId,
  };
}

/** The sum of one measure over traces as a number; undefined when no trace has it. */
function sumOf(traces: readonly TraceTotals[], measure: keyof TraceTotals): number | undefined {
  let total: number | undefined;
  for (const trace of traces) {
    const value = trace[measure];
    if (value !== null) total = (total ?? 0) + Number(value);
  }
  return total;
}
