import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { ThreadBatches } from "../../store/thread-batches.js";
import type { ThreadRecord } from "../../store/thread-store.js";
import type { WorkspacePermission } from "../iam/permissions.js";
import { authorizeWorkspace } from "../iam/principal.js";
import { requireUuid } from "../request-validation.js";

/** NOT_FOUND for a thread of the workspace. */
export function threadNotFound(threadId: string): ConnectError {
  return new ConnectError(`thread ${threadId} not found`, Code.NotFound);
}

/**
 * The authorized workspace and the thread `rawId` of it; NOT_FOUND when the workspace has no such
 * thread (another workspace's thread is not found either: every lookup is scoped by workspace).
 */
export async function loadThread(
  threads: ThreadBatches,
  ctx: HandlerContext,
  permission: WorkspacePermission,
  rawId: string,
): Promise<{ workspaceId: string; thread: ThreadRecord }> {
  const { workspace } = await authorizeWorkspace(ctx, permission);
  const threadId = requireUuid(rawId, "thread_id");
  const thread = await threads.find({ workspaceId: workspace.id, threadId });
  if (!thread) throw threadNotFound(threadId);
  return { workspaceId: workspace.id, thread };
}
