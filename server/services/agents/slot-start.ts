/**
 * How a fast path of run creation (stateless-start.ts, quiet-thread-start.ts) hands the run it
 * inserted, claimed under a reserved slot's lease, to that slot: the slot runs what was inserted,
 * and is given back when nothing was (the insert found a reason not to) or the insert failed.
 */
import type { RunSlot } from "../../jobs/agent-run-job.js";
import type { AgentRunRecord } from "../../store/agents/agent-run-store.js";

/** The run as its creator sees it: created (pending), as when a worker claims it a moment later. */
export function asCreated(run: AgentRunRecord): AgentRunRecord {
  return { ...run, status: "pending", attempt: 0 };
}

/**
 * Runs `insert` (which claims its run under `slot`'s lease), then starts the inserted run in `slot`;
 * gives the slot back when `insert` inserted nothing (undefined) or threw. Answers the run as
 * created ({@link asCreated}), or undefined when nothing was inserted.
 */
export async function startInSlot(
  slot: RunSlot,
  insert: () => Promise<AgentRunRecord | undefined>,
): Promise<AgentRunRecord | undefined> {
  let stored: AgentRunRecord | undefined;
  try {
    stored = await insert();
  } catch (error) {
    slot.release();
    throw error;
  }
  if (!stored) {
    slot.release();
    return undefined;
  }
  slot.run({ run: stored, leaseToken: slot.leaseToken, orphaned: false });
  return asCreated(stored);
}
