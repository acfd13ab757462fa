import { Code, ConnectError } from "@connectrpc/connect";
import type { CronFire } from "../../jobs/agent-cron-tick.js";
import type { AgentRunRecord } from "../../store/agents/agent-run-store.js";
import { findAssistant } from "../../store/agents/assistant-store.js";
import type { Transaction } from "../../store/db.js";
import { runRequestOf } from "./cron-requests.js";
import { createRun, type RunWriteDeps } from "./run-creation.js";
import { parseRunRequest } from "./run-requests.js";

/** What firing needs: the run creation path's dependencies (no local worker slot: runs go through the queue). */
export type CronFiringDeps = RunWriteDeps;

/**
 * How a cron fires: the run its payload describes is created through the run creation path (as a
 * run create request would make it), inside the tick's transaction, on the cron's thread or, for a
 * stateless cron, on a new thread deleted or kept after the run as `on_run_completed` says. The run
 * carries the cron's metadata and its `cron_id`. Requests never start runs in a tick's process
 * directly: the run is dispatched through the queue, where any worker takes it.
 */
export function createCronFiring(deps: CronFiringDeps): CronFire {
  return async (tx: Transaction, cron): Promise<AgentRunRecord> => {
    const request = runRequestOf(cron);
    const run = parseRunRequest(request, cron.threadId === null);
    const assistant = await findAssistant(tx, cron.workspaceId, cron.assistantId);
    // Deleting an assistant deletes its crons (migration 0013), so this is a race with that delete.
    if (!assistant) throw new ConnectError(`assistant ${cron.assistantId} is gone`, Code.NotFound);
    const created = await createRun(
      deps,
      {
        workspaceId: cron.workspaceId,
        target: cron.threadId === null ? { kind: "stateless" } : { kind: "thread", threadId: cron.threadId },
        request: {
          ...run,
          assistantId: cron.assistantId,
          metadata: { ...run.metadata, cron_id: cron.cronId },
          onCompletion: cron.onRunCompleted ?? "delete",
        },
        headers: new Headers(),
      },
      // The cron's runs count in usage under whoever created the cron.
      { within: { tx, assistant, creator: cron.creator } },
    );
    return created.run;
  };
}
