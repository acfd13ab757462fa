import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { JsonObject, ThreadKey, ThreadRecord } from "../../store/agents/thread-store.js";
import type { ThreadBatches } from "../../store/batching/thread-batches.js";
import { authorizeEvent, authorizeWorkspace, type Principal } from "../iam/principal.js";
import { requireUuid } from "../request-validation.js";

/** NOT_FOUND for a thread of the workspace. */
export function threadNotFound(threadId: string): ConnectError {
  return new ConnectError(`thread ${threadId} not found`, Code.NotFound);
}

/** Custom auth events of an existing thread: reading it, changing it, deleting it, running on it. */
export type ThreadEvent = "threads:read" | "threads:update" | "threads:delete" | "threads:create_run";

/**
 * The thread at `key` as `principal` may see it for `event`: NOT_FOUND when it does not exist or a
 * custom auth handler's filter hides it; the handler's refusal as it answers. `value` is what the
 * handler sees (it may change it); by default `{thread_id}`.
 */
export async function visibleThread(
  threads: ThreadBatches,
  principal: Principal,
  event: ThreadEvent,
  key: ThreadKey,
  value: Record<string, unknown> = { thread_id: key.threadId },
): Promise<ThreadRecord> {
  const auth = await authorizeEvent(principal, event, value);
  const thread = auth ? await threads.findVisible(key, auth) : await threads.find(key);
  if (!thread) throw threadNotFound(key.threadId);
  return thread;
}

/**
 * The authorized workspace and the thread `rawId` of it; NOT_FOUND when the workspace has no such
 * thread (another workspace's thread is not found either: every lookup is scoped by workspace), or
 * when custom auth's handler for `event` hides it. Reading needs threads:read, the rest threads:write.
 */
export async function loadThread(
  threads: ThreadBatches,
  ctx: HandlerContext,
  event: ThreadEvent,
  rawId: string,
  value?: Record<string, unknown>,
): Promise<{ workspaceId: string; thread: ThreadRecord; principal: Principal }> {
  const { principal, workspace } = await authorizeWorkspace(
    ctx,
    event === "threads:read" ? "threads:read" : "threads:write",
  );
  const threadId = requireUuid(rawId, "thread_id");
  const thread = await visibleThread(
    threads,
    principal,
    event,
    { workspaceId: workspace.id, threadId },
    value,
  );
  return { workspaceId: workspace.id, thread, principal };
}

/**
 * `value.metadata` after a custom auth handler had the chance to change it: the metadata to store.
 * A handler that left no JSON object there is refused, naming the event.
 */
export function handlerMetadata(value: Record<string, unknown>, event: string): JsonObject {
  const metadata = value.metadata ?? {};
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata))
    throw new ConnectError(
      `the auth handler for ${event} set value.metadata to something that is not an object`,
      Code.PermissionDenied,
    );
  return metadata as JsonObject;
}
