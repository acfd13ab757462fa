/**
 * Feedback items of trace runs (`run_feedback`, migrations 0006 and 0016) as the feedback API reads
 * and changes them. Every change is followed, in the same transaction, by refreshFeedbackStats
 * (run-store.ts) of the runs it touched, under the lock of {@link lockFeedbackRuns}.
 */

import { LOCK_SEED, lockIds } from "../advisory-locks.js";
import { insertFeedback } from "./run-store.js";
import type { NormalizedFeedback } from "./trace-rows.js";
import type { WorkspaceBound } from "./workspace-scope.js";

/** A stored feedback item. Times are ISO 8601 UTC text with microseconds. */
export interface FeedbackRecord {
  id: string;
  run_id: string;
  trace_id: string | null;
  key: string;
  score: number | null;
  value: unknown;
  comment: string | null;
  correction: unknown;
  feedback_source: Record<string, unknown> | null;
  session_id: string | null;
  created_at: string;
  modified_at: string;
}

/** What a feedback list keeps; empty lists do not filter. */
export interface FeedbackFilter {
  runIds: readonly string[];
  keys: readonly string[];
  /** feedback_source.type values. */
  sources: readonly string[];
  /** Projects: of the feedback, or of its run. */
  sessionIds: readonly string[];
  offset: number;
  limit: number;
}

/** What an update changes; undefined fields stay. */
export interface FeedbackChanges {
  score?: number | null;
  value?: unknown;
  comment?: string | null;
  correction?: unknown;
}

/** ISO 8601 UTC with exactly six fractional digits. */
const ISO_MICROS = `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`;

function columns(q: WorkspaceBound) {
  return q`
    id, run_id, trace_id, key, score, value, comment, correction, feedback_source, session_id,
    to_char(created_at at time zone 'UTC', ${ISO_MICROS}) as created_at,
    to_char(modified_at at time zone 'UTC', ${ISO_MICROS}) as modified_at`;
}

/**
 * Serialises feedback changes of the same runs: a transaction-scoped advisory lock on each run id
 * (ordered, so two changes never wait on each other in a cycle), so a stats refresh after this sees
 * every committed feedback item of the run, and a concurrent change waits for this transaction.
 *
 * A lock on the id rather than on the run's row, because the run may not be committed yet: the
 * ingest takes these locks for the runs it writes before it writes them (ingest-service.ts). Feedback
 * created through the API for a run that a batch is inserting then waits for the batch to commit and
 * refreshes the stored run, or the batch waits for the feedback to commit and finds it when it looks
 * for feedback that arrived before its runs. Locked by row, neither saw the other and the run
 * never counted that feedback.
 */
export function lockFeedbackRuns(
  q: WorkspaceBound,
  workspaceId: string,
  runIds: readonly string[],
): Promise<void> {
  return lockIds(q, workspaceId, runIds, LOCK_SEED.runFeedback);
}

/** Stores one feedback item; false when the workspace already has one with its id. */
export async function createFeedback(
  q: WorkspaceBound,
  workspaceId: string,
  item: NormalizedFeedback,
): Promise<boolean> {
  return (await insertFeedback(q, workspaceId, [item])).length === 1;
}

/** One feedback item of the workspace, or undefined. */
export async function findFeedback(
  q: WorkspaceBound,
  workspaceId: string,
  id: string,
): Promise<FeedbackRecord | undefined> {
  const [row] = await q<FeedbackRecord[]>`
    select ${columns(q)} from run_feedback where workspace_id = ${workspaceId} and id = ${id}`;
  return row;
}

/** A page of the workspace's feedback matching `filter`, newest first. */
export async function listFeedback(
  q: WorkspaceBound,
  workspaceId: string,
  filter: FeedbackFilter,
): Promise<FeedbackRecord[]> {
  const where = [q`f.workspace_id = ${workspaceId}`];
  if (filter.runIds.length > 0) where.push(q`f.run_id = any(${[...filter.runIds]}::uuid[])`);
  if (filter.keys.length > 0) where.push(q`f.key = any(${[...filter.keys]}::text[])`);
  if (filter.sources.length > 0)
    where.push(q`f.feedback_source ->> 'type' = any(${[...filter.sources]}::text[])`);
  if (filter.sessionIds.length > 0) {
    const sessions = q`${[...filter.sessionIds]}::uuid[]`;
    where.push(q`(f.session_id = any(${sessions}) or exists (
      select 1 from runs as run
      where run.workspace_id = f.workspace_id and run.id = f.run_id and run.session_id = any(${sessions})))`);
  }
  return q<FeedbackRecord[]>`
    select ${columns(q)} from run_feedback as f
    where ${where.reduce((a, b) => q`${a} and ${b}`)}
    order by f.created_at desc, f.id desc
    offset ${filter.offset} limit ${filter.limit}`;
}

/** Applies `changes` to a feedback item; the changed item, or undefined when there is none. */
export async function updateFeedback(
  q: WorkspaceBound,
  workspaceId: string,
  id: string,
  changes: FeedbackChanges,
): Promise<FeedbackRecord | undefined> {
  const set = q`
    score = case when ${changes.score !== undefined} then ${changes.score ?? null}::double precision else score end,
    value = case when ${changes.value !== undefined} then ${json(q, changes.value)} else value end,
    comment = case when ${changes.comment !== undefined} then ${changes.comment ?? null}::text else comment end,
    correction = case when ${changes.correction !== undefined} then ${json(q, changes.correction)} else correction end,
    modified_at = now()`;
  const [row] = await q<FeedbackRecord[]>`
    update run_feedback set ${set}
    where workspace_id = ${workspaceId} and id = ${id}
    returning ${columns(q)}`;
  return row;
}

/** Deletes a feedback item; the run it was on, or undefined when there was none. */
export async function deleteFeedback(
  q: WorkspaceBound,
  workspaceId: string,
  id: string,
): Promise<string | undefined> {
  const [row] = await q<{ run_id: string }[]>`
    delete from run_feedback where workspace_id = ${workspaceId} and id = ${id} returning run_id`;
  return row?.run_id;
}

/** A JSON value as a jsonb parameter (null for undefined or null). */
function json(q: WorkspaceBound, value: unknown) {
  return value === undefined || value === null ? q`null::jsonb` : q`${q.json(value as never)}::jsonb`;
}
