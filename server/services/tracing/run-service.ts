import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { RunService } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import type { Sql } from "../../store/db.js";
import { findProjectIds, findRun, queryRuns } from "../../store/tracing/run-query-store.js";
import { inWorkspaceScope, unconfined } from "../../store/tracing/workspace-scope.js";
import { authorizeWorkspace } from "../iam/principal.js";
import { encodeRunCursor } from "./run-cursor.js";
import { selectedRunFields } from "./run-fields.js";
import { runMessage } from "./run-message.js";
import { parseRunQuery, runFilterParameter, uuidOf } from "./run-query-request.js";

/** Dependencies of {@link createRunService}. */
export interface RunServiceDeps {
  sql: Sql;
}

/**
 * RunService: read one run, query runs (filters, trace and tree filters, select, keyset cursors)
 * and validate filters. Needs `runs:read`; every query is scoped to the selected workspace in SQL,
 * and queries also run in a workspace scope (row-level security) of that workspace.
 */
export function createRunService({ sql }: RunServiceDeps): ServiceImpl<typeof RunService> {
  return {
    async readRun(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const runId = uuidOf("run_id", request.runId);
      // Unconfined: a primary-key read whose only condition is the workspace and the id, where a
      // workspace scope would cost a third of the request (see workspace-scope.ts).
      const row = await findRun(unconfined(sql), workspace.id, runId);
      if (!row) throw new ConnectError(`run ${runId} not found`, Code.NotFound);
      return runMessage(row, selectedRunFields([]));
    },

    async queryRuns(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const { query, fields } = parseRunQuery(request, workspace.id);
      const rows = await inWorkspaceScope(sql, [workspace.id], async (q) => {
        if (query.sessionIds.length > 0) {
          const found = new Set(await findProjectIds(q, workspace.id, query.sessionIds));
          const missing = query.sessionIds.find((id) => !found.has(id));
          if (missing) throw new ConnectError(`project ${missing} not found`, Code.NotFound);
        }
        return queryRuns(q, query);
      });
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      const more = rows.length > query.limit && last !== undefined;
      return {
        runs: page.map((row) => runMessage(row, fields)),
        cursors: more ? { next: encodeRunCursor({ startTime: last.start_time, id: last.id }) } : {},
      };
    },

    async validateRunFilter(request, ctx) {
      await authorizeWorkspace(ctx, "runs:read");
      runFilterParameter("filter", request.filter);
      runFilterParameter("trace_filter", request.traceFilter);
      runFilterParameter("tree_filter", request.treeFilter);
      return {};
    },
  };
}
