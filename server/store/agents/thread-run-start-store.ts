/**
 * A run's start on a quiet thread in one statement: the SQL function `agentplane_start_thread_run`
 * (migration 0037) checks the assistant unchanged, locks the thread's queue, checks the thread is
 * quiet and inserts the run claimed. See the migration for what "quiet" means and why one
 * statement suffices.
 */
import { encryptionContextText } from "../crypto/encryption-scope.js";
import { pgErrorCode, type Queryable } from "../db.js";
import type { JsonObject } from "../json-value.js";
import {
  type AgentRunRecord,
  type ClaimOnInsert,
  type NewRun,
  type RunRow,
  runRecordOf,
} from "./agent-run-store.js";

/** The SQLSTATE of migration 0037's function for an assistant that changed since it was read. */
const ASSISTANT_CHANGED_SQLSTATE = "AP002";

/** What {@link startRunOnQuietThread} found: the run started, or why not (nothing was written). */
export type QuietThreadStartResult =
  | { started: AgentRunRecord }
  /** The thread is missing, has a config of its own, or has a pending or running run. */
  | { started: undefined; notQuiet: true }
  /** The assistant's row is no longer at the version the run was made from. */
  | { started: undefined; assistantChanged: true };

/** What {@link startRunOnQuietThread} is told besides the run. */
export interface QuietThreadStart {
  /** The lease the run is claimed under (the creating process's slot). */
  claim: ClaimOnInsert;
  /** Merged into the thread's metadata (the graph's ids, with rich threads); null for none. */
  threadMetadata: JsonObject | null;
  /** The version of the assistant's row the run was made from; undefined to check none. */
  assistantRowVersion: string | undefined;
}

/**
 * Inserts `run` (on an existing thread, with no `after_seconds`), running under `start.claim` as
 * its first attempt, when its thread is quiet and its assistant unchanged; says why not otherwise.
 */
export async function startRunOnQuietThread(
  q: Queryable,
  run: NewRun,
  start: QuietThreadStart,
): Promise<QuietThreadStartResult> {
  const { claim, threadMetadata, assistantRowVersion } = start;
  let rows: RunRow[];
  try {
    rows = await q<RunRow[]>`
    select * from agentplane_start_thread_run(
      ${run.workspaceId}::uuid, ${run.threadId}::uuid, ${run.runId}::uuid, ${run.assistantId}::uuid,
      ${assistantRowVersion ?? null}::xid, ${run.graphId}, ${q.json(run.metadata)}, ${q.json(run.kwargs)},
      ${run.multitaskStrategy}, ${claim.owner}, ${claim.leaseToken}::uuid, ${claim.leaseSeconds}::float8,
      ${encryptionContextText()}, ${run.creator.apiKeyId}::uuid, ${run.creator.userId}::uuid,
      ${threadMetadata === null ? null : q.json(threadMetadata)}::jsonb)`;
  } catch (error) {
    if (pgErrorCode(error) === ASSISTANT_CHANGED_SQLSTATE)
      return { started: undefined, assistantChanged: true };
    throw error;
  }
  const [row] = rows;
  return row ? { started: runRecordOf(row) } : { started: undefined, notQuiet: true };
}
