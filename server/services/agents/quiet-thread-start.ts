/**
 * The fast path of a run on an existing thread: a run that may start now, in a free slot of this
 * process, on a quiet thread (it exists, has no config of its own, and no run of it is pending or
 * running) is inserted already claimed in one statement (store/agents/thread-run-start-store.ts):
 * no transaction, one round trip instead of two.
 *
 * Invariants (the tests in test/integration/quiet-thread-start.test.ts break when these do):
 * - it is tried only for a run on a thread, with no `after_seconds`, no `checkpoint` and no custom
 *   auth filter on threads, when this process executes runs and has a slot free for it, reserved
 *   before the statement is sent;
 * - the statement locks the thread's queue before it checks the thread, so a run created on the
 *   thread before the lock was granted makes it not quiet: the multitask strategy is never skipped;
 * - the run is made as the long way makes it on a thread with no config (so the thread's config,
 *   which the statement checks is empty, has nothing to add), and from a kept assistant
 *   (run-assistant-cache.ts) only while the assistant's row is at the version read;
 * - whatever it does not start, it writes nothing of: the slot is given back and the caller takes
 *   the long way (an assistant that changed is forgotten first, and read afresh there).
 */
import type { RunSettings } from "../../config.js";
import type { LocalRuns } from "../../jobs/agent-run-job.js";
import type { ConfigurableHeadersConfig } from "../../runtime/graph-config.js";
import type { AgentRunRecord, RunCreator } from "../../store/agents/agent-run-store.js";
import { startRunOnQuietThread } from "../../store/agents/thread-run-start-store.js";
import type { Queryable } from "../../store/db.js";
import type { AssistantLookup, RunAssistantDeps } from "./run-assistant.js";
import { servedAssistant } from "./run-assistant.js";
import type { RunAssistantCache } from "./run-assistant-cache.js";
import type { RunTarget } from "./run-authorization.js";
import { newRunOf } from "./run-new.js";
import type { RunRequest } from "./run-requests.js";
import { startInSlot } from "./slot-start.js";

/** What the fast path needs. */
export interface QuietThreadStartDeps extends Pick<RunAssistantDeps, "graphIds"> {
  sql: Queryable;
  settings: Pick<RunSettings, "leaseSeconds" | "richThreads">;
  configurableHeaders: ConfigurableHeadersConfig | undefined;
  assistants: RunAssistantCache;
  localRuns?: LocalRuns | undefined;
}

/** A run on a thread, as its caller asked for it. */
export interface ThreadRunAsked {
  workspaceId: string;
  threadId: string;
  target: RunTarget;
  request: RunRequest;
  headers: Headers;
  creator: RunCreator;
  lookup: AssistantLookup;
}

/**
 * Starts the run `asked` describes in a free slot of this process when its thread is quiet (see
 * the module's comment); resolves with the run as created (pending, as when a worker claims it a
 * moment later), or undefined when the caller must create it the long way (nothing written).
 */
export async function startOnQuietThread(
  deps: QuietThreadStartDeps,
  asked: ThreadRunAsked,
): Promise<AgentRunRecord | undefined> {
  const { workspaceId, threadId, target, request, lookup } = asked;
  if (target.kind !== "thread" || target.auth || request.afterSeconds !== 0 || request.checkpoint !== null)
    return undefined;
  const slot = deps.localRuns?.reserve();
  if (!slot) return undefined;
  return startInSlot(slot, async () => {
    const { assistant, rowVersion } = await deps.assistants.get(
      workspaceId,
      lookup,
      request.assistantId,
      false,
    );
    servedAssistant(deps, assistant);
    const newRun = newRunOf(deps, {
      workspaceId,
      threadId,
      thread: undefined,
      stateless: false,
      assistant,
      request,
      headers: asked.headers,
      creator: asked.creator,
    });
    const result = await startRunOnQuietThread(deps.sql, newRun, {
      claim: { owner: slot.owner, leaseToken: slot.leaseToken, leaseSeconds: deps.settings.leaseSeconds },
      threadMetadata: deps.settings.richThreads
        ? { graph_id: assistant.graphId, assistant_id: assistant.assistantId }
        : null,
      assistantRowVersion: rowVersion,
    });
    if ("assistantChanged" in result) deps.assistants.forget(workspaceId, assistant.assistantId);
    return result.started;
  });
}
