import type { Sql } from "../store/db.js";
import { purgeDeletedWorkspace } from "../store/iam/workspace-store.js";
import { defineJob, type JobDefinition } from "./job-definition.js";

/** Payload of the workspace purge job. */
export interface WorkspacePurgePayload {
  /** The workspace marked deleted. */
  workspaceId: string;
}

/**
 * Removes a workspace that DeleteWorkspace marked deleted, with everything it holds (foreign keys
 * cascade). Runs in the background because a large workspace can take long to delete; idempotent,
 * so a retry after a crash is harmless.
 */
export function createWorkspacePurgeJob(sql: Sql): JobDefinition<WorkspacePurgePayload> {
  return defineJob<WorkspacePurgePayload>({
    name: "workspace.purge",
    version: 1,
    // Deleting is retried on transient failures (deadlocks, restarts) with growing pauses.
    retryLimit: 10,
    retryDelaySeconds: 5,
    retryBackoff: true,
    // One hour covers deleting millions of rows; past it the attempt is retried.
    expireInSeconds: 60 * 60,
    async handler(payload) {
      await purgeDeletedWorkspace(sql, payload.workspaceId);
    },
  });
}
