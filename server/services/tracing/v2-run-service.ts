import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { RunService } from "../../../gen/agentplane/tracing/v2/run_service_pb.js";
import { type Clock, systemClock } from "../../clock.js";
import type { Sql } from "../../store/db.js";
import { findProjectIds, findRun, queryRuns, type RunRow } from "../../store/tracing/run-query-store.js";
import { inWorkspaceScope, unconfined } from "../../store/tracing/workspace-scope.js";
import { authorizeWorkspace } from "../iam/principal.js";
import { encodeRunCursor } from "./run-cursor.js";
import { appPath } from "./run-message.js";
import { uuidOf } from "./run-query-request.js";
import { requiredUuid } from "./v2-request.js";
import { selectedV2Fields } from "./v2-run-fields.js";
import { v2RunEncoder, v2RunMessage } from "./v2-run-message.js";
import { parseV2RunQuery } from "./v2-run-query.js";

/** Dependencies of {@link createV2RunService}. */
export interface V2RunServiceDeps {
  sql: Sql;
  /** What the default time windows are measured from. */
  clock?: Clock;
}

/**
 * The v2 RunService (`/api/v2/runs/...`): query runs, get one run, get a run's URL. The same store
 * queries as the v1 RunService, so both answer the same runs in the same order; needs `runs:read`,
 * and every query is scoped to the selected workspace in SQL and by row-level security.
 */
export function createV2RunService({
  sql,
  clock = systemClock,
}: V2RunServiceDeps): ServiceImpl<typeof RunService> {
  return {
    async queryRuns(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const { query, fields } = parseV2RunQuery(request, workspace.id, clock.now());
      // The project check and the page go to Postgres together (one round trip); a missing project
      // discards the page.
      const rows = await inWorkspaceScope(sql, [workspace.id], async (q) => {
        const [projects, rows] = await Promise.all([
          findProjectIds(q, workspace.id, query.sessionIds),
          queryRuns(q, query),
        ]);
        const found = new Set(projects);
        const missing = query.sessionIds.find((id) => !found.has(id));
        if (missing) throw new ConnectError(`project ${missing} not found`, Code.NotFound);
        return rows;
      });
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      const more = rows.length > query.limit && last !== undefined;
      return {
        items: page.map(v2RunEncoder(fields)),
        ...(more ? { nextCursor: encodeRunCursor({ startTime: last.start_time, id: last.id }) } : {}),
      };
    },

    async getRun(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const fields = selectedV2Fields(request.selects);
      const row = await runOfProject(sql, workspace.id, request.runId, request.projectId);
      return v2RunMessage(row, fields);
    },

    async getRunUrl(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const traceId = requiredUuid("trace_id", request.traceId);
      const row = await runOfProject(sql, workspace.id, request.runId, request.projectId);
      if (row.trace_id !== traceId) {
        throw new ConnectError(`run ${row.id} not found in trace ${traceId}`, Code.NotFound);
      }
      return { url: `${originOf(ctx)}${appPath(row)}` };
    },
  };
}

/** The run `runId` of project `projectId` in the workspace; NOT_FOUND when there is none. */
async function runOfProject(
  sql: Sql,
  workspaceId: string,
  runId: string,
  projectId: string,
): Promise<RunRow> {
  const id = uuidOf("run_id", runId);
  const project = requiredUuid("project_id", projectId);
  // Unconfined: a primary-key read naming its workspace, as the v1 ReadRun (see workspace-scope.ts).
  const row = await findRun(unconfined(sql), workspaceId, id);
  if (!row || row.session_id !== project) {
    throw new ConnectError(`run ${id} not found in project ${project}`, Code.NotFound);
  }
  return row;
}

/** The scheme, host and port the client reached this server at. */
function originOf(ctx: HandlerContext): string {
  return new URL(ctx.url).origin;
}
