import { encryptionContextText } from "../crypto/encryption-scope.js";
import type { Queryable } from "../db.js";
import { type AuthFilter, authFilterSql } from "../filters/auth-filter-sql.js";
import type { JsonObject, JsonValue } from "../json-value.js";
import { assistantUnchanged } from "./assistant-store.js";

/** Run status values, as the checks of migration 0010 allow. */
export type RunStatus = "pending" | "running" | "error" | "success" | "timeout" | "interrupted";

/** What a new run on a busy thread does to the runs before it. */
export type MultitaskStrategy = "reject" | "interrupt" | "rollback" | "enqueue";

/** How a cancel stops a run: keep its checkpoints, or delete it with them. */
export type CancelAction = "interrupt" | "rollback";

/**
 * Who created a run (or a cron): the API key and its user; null for a service key's user, and both
 * null when no key was involved. The run's trace counts in usage under them (migration 0028).
 */
export interface RunCreator {
  apiKeyId: string | null;
  userId: string | null;
}

/** A run row. */
export interface AgentRunRecord {
  workspaceId: string;
  runId: string;
  threadId: string;
  assistantId: string;
  graphId: string;
  status: RunStatus;
  metadata: JsonObject;
  kwargs: JsonObject;
  multitaskStrategy: MultitaskStrategy;
  temporary: boolean;
  attempt: number;
  cancelAction: CancelAction | null;
  /** Why it was cancelled, when it was (see migration 0031). */
  cancelReason: string | null;
  output: JsonValue | null;
  notBefore: Date;
  createdAt: Date;
  updatedAt: Date;
  /** The creator's custom encryption context (JSON text, store/crypto/encryption-scope.ts); null when none. */
  encryptionContext: string | null;
  /** Who created the run; its trace counts under them. */
  creator: RunCreator;
}

/** A row of agent_runs as the driver reads it. */
export interface RunRow {
  workspace_id: string;
  run_id: string;
  thread_id: string;
  assistant_id: string;
  graph_id: string;
  status: RunStatus;
  metadata: JsonObject;
  kwargs: JsonObject;
  multitask_strategy: MultitaskStrategy;
  temporary: boolean;
  attempt: number;
  cancel_action: CancelAction | null;
  cancel_reason: string | null;
  output: JsonValue | null;
  not_before: Date;
  created_at: Date;
  updated_at: Date;
  encryption_context: string | null;
  created_by_api_key_id: string | null;
  created_by_user_id: string | null;
}

/** The record of a row of agent_runs. */
export function runRecordOf(row: RunRow): AgentRunRecord {
  return {
    workspaceId: row.workspace_id,
    runId: row.run_id,
    threadId: row.thread_id,
    assistantId: row.assistant_id,
    graphId: row.graph_id,
    status: row.status,
    metadata: row.metadata,
    kwargs: row.kwargs,
    multitaskStrategy: row.multitask_strategy,
    temporary: row.temporary,
    attempt: row.attempt,
    cancelAction: row.cancel_action,
    cancelReason: row.cancel_reason ?? null,
    output: row.output,
    notBefore: row.not_before,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    encryptionContext: row.encryption_context,
    creator: { apiKeyId: row.created_by_api_key_id, userId: row.created_by_user_id },
  };
}

/** A run to insert. */
export interface NewRun {
  workspaceId: string;
  runId: string;
  threadId: string;
  assistantId: string;
  graphId: string;
  metadata: JsonObject;
  kwargs: JsonObject;
  multitaskStrategy: MultitaskStrategy;
  temporary: boolean;
  /** Seconds from now before the run may start. */
  afterSeconds: number;
  creator: RunCreator;
}

/**
 * Serialises the changes to one thread's queue of runs (creation, claiming, finishing) until the
 * transaction ends. An advisory lock rather than the thread row's lock: a stateless run's thread
 * may be created in the same transaction, and deleting a thread must not wait on a queue. The
 * lock is the SQL function `agentplane_lock_thread_queue` (migration 0035), which the end and the
 * claim of a run take too.
 */
export async function lockThreadQueue(q: Queryable, workspaceId: string, threadId: string): Promise<void> {
  await q`select agentplane_lock_thread_queue(${workspaceId}::uuid, ${threadId}::uuid)`;
}

/** How {@link insertRun} also starts the run: claimed at once by the creating process. */
export interface ClaimOnInsert {
  owner: string;
  leaseToken: string;
  leaseSeconds: number;
}

/**
 * Inserts a run and, in the same statement, marks its thread busy (merging `threadMetadata` into
 * the thread's metadata when given). Pending, or, with `claim`, running under that lease as its
 * first attempt: only when the caller knows it heads its thread's queue (the queue is locked and
 * empty, or the thread is new).
 */
export async function insertRun(
  q: Queryable,
  run: NewRun,
  options: { threadMetadata: JsonObject | null; claim?: ClaimOnInsert },
): Promise<AgentRunRecord> {
  const { claim, threadMetadata } = options;
  const [row] = await q<RunRow[]>`
    with inserted as (
      insert into agent_runs (workspace_id, run_id, thread_id, assistant_id, graph_id, metadata, kwargs,
                              multitask_strategy, temporary, not_before, status, attempt, lease_owner,
                              lease_token, lease_expires_at, started_at, encryption_context,
                              created_by_api_key_id, created_by_user_id)
      values (${run.workspaceId}, ${run.runId}, ${run.threadId}, ${run.assistantId}, ${run.graphId},
              ${q.json(run.metadata)}, ${q.json(run.kwargs)}, ${run.multitaskStrategy}, ${run.temporary},
              now() + make_interval(secs => ${run.afterSeconds}::float8),
              ${claim ? "running" : "pending"}, ${claim ? 1 : 0}, ${claim?.owner ?? null},
              ${claim?.leaseToken ?? null}::uuid,
              ${claim ? q`now() + make_interval(secs => ${claim.leaseSeconds}::float8)` : null},
              ${claim ? q`now()` : null}, ${encryptionContextText()}, ${run.creator.apiKeyId}::uuid,
              ${run.creator.userId}::uuid)
      returning *
    ), busy as (
      update threads set status = 'busy', updated_at = now()
        ${threadMetadata ? q`, metadata = metadata || ${q.json(threadMetadata)}` : q``}
      where workspace_id = ${run.workspaceId} and thread_id = ${run.threadId}
    )
    select * from inserted`;
  if (!row) throw new Error("insert into agent_runs returned no row");
  return runRecordOf(row);
}

/** What {@link insertRunOnNewThread} found: the run inserted, or why not. */
export type NewThreadRunInsert =
  | { inserted: AgentRunRecord }
  /** The assistant's row is no longer at the version the run was made from: nothing was written. */
  | { inserted: undefined; assistantChanged: true };

/**
 * Inserts a stateless run's new thread, busy, with `threadMetadata`, and the run on it, in one
 * statement (one round trip, atomic without a transaction): nobody else knows the thread yet, so
 * it has no queue to lock. Pending, or, with `claim`, running under that lease as its first
 * attempt. With `assistantRowVersion` (the version of the assistant's row the run was made from,
 * store/agents/assistant-store.ts), nothing is written unless the row is still at that version. A
 * thread id already taken inserts nothing and throws. The record is the run as inserted, built from
 * `run` and the times Postgres set (its JSON is not read back).
 */
export async function insertRunOnNewThread(
  q: Queryable,
  run: NewRun,
  threadMetadata: JsonObject,
  options: { claim?: ClaimOnInsert; assistantRowVersion?: string } = {},
): Promise<NewThreadRunInsert> {
  const { claim, assistantRowVersion } = options;
  const check =
    assistantRowVersion === undefined
      ? q`true`
      : assistantUnchanged(q, run.workspaceId, run.assistantId, assistantRowVersion);
  const encryptionContext = encryptionContextText();
  const [row] = await q<
    { unchanged: boolean; not_before: Date | null; created_at: Date; updated_at: Date }[]
  >`
    with current as (
      select ${check} as unchanged
    ), thread as (
      insert into threads (workspace_id, thread_id, metadata, status)
      select ${run.workspaceId}, ${run.threadId}, ${q.json(threadMetadata)}, 'busy' from current where unchanged
      on conflict (workspace_id, thread_id) do nothing
      returning workspace_id, thread_id
    ), run as (
      insert into agent_runs (workspace_id, run_id, thread_id, assistant_id, graph_id, metadata, kwargs,
                              multitask_strategy, temporary, not_before, status, attempt, lease_owner,
                              lease_token, lease_expires_at, started_at, encryption_context,
                              created_by_api_key_id, created_by_user_id)
      select thread.workspace_id, ${run.runId}, thread.thread_id, ${run.assistantId}, ${run.graphId},
             ${q.json(run.metadata)}, ${q.json(run.kwargs)}, ${run.multitaskStrategy}, ${run.temporary},
             now() + make_interval(secs => ${run.afterSeconds}::float8), ${claim ? "running" : "pending"},
             ${claim ? 1 : 0}, ${claim?.owner ?? null}, ${claim?.leaseToken ?? null}::uuid,
             ${claim ? q`now() + make_interval(secs => ${claim.leaseSeconds}::float8)` : null},
             ${claim ? q`now()` : null}, ${encryptionContext}, ${run.creator.apiKeyId}::uuid,
             ${run.creator.userId}::uuid
      from thread
      returning not_before, created_at, updated_at
    )
    select current.unchanged, run.not_before, run.created_at, run.updated_at from current left join run on true`;
  if (!row?.unchanged) return { inserted: undefined, assistantChanged: true };
  if (!row.not_before)
    throw new Error(`thread ${run.threadId} already exists: a new run's thread id was taken`);
  return {
    inserted: {
      workspaceId: run.workspaceId,
      runId: run.runId,
      threadId: run.threadId,
      assistantId: run.assistantId,
      graphId: run.graphId,
      status: claim ? "running" : "pending",
      metadata: run.metadata,
      kwargs: run.kwargs,
      multitaskStrategy: run.multitaskStrategy,
      temporary: run.temporary,
      attempt: claim ? 1 : 0,
      cancelAction: null,
      cancelReason: null,
      output: null,
      notBefore: row.not_before,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      encryptionContext,
      creator: run.creator,
    },
  };
}

/** The workspace's run `runId`, optionally only on thread `threadId`. */
export async function findRun(
  q: Queryable,
  workspaceId: string,
  runId: string,
  threadId?: string,
): Promise<AgentRunRecord | undefined> {
  const [row] = await q<RunRow[]>`
    select * from agent_runs
    where workspace_id = ${workspaceId} and run_id = ${runId}
      ${threadId === undefined ? q`` : q`and thread_id = ${threadId}`}`;
  return row && runRecordOf(row);
}

/** A page of a thread's runs, newest first. */
export async function listRuns(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  page: { limit: number; offset: number; status?: RunStatus },
): Promise<AgentRunRecord[]> {
  const rows = await q<RunRow[]>`
    select * from agent_runs
    where workspace_id = ${workspaceId} and thread_id = ${threadId}
      ${page.status === undefined ? q`` : q`and status = ${page.status}`}
    order by created_at desc, run_id desc
    limit ${page.limit} offset ${page.offset}`;
  return rows.map(runRecordOf);
}

/** The thread's pending and running runs, oldest first. */
export async function activeRunsOfThread(
  q: Queryable,
  workspaceId: string,
  threadId: string,
): Promise<AgentRunRecord[]> {
  const rows = await q<RunRow[]>`
    select * from agent_runs
    where workspace_id = ${workspaceId} and thread_id = ${threadId} and status in ('pending', 'running')
    order by run_id`;
  return rows.map(runRecordOf);
}

/** Deletes a run that has ended; what happened: deleted, still active, or no such run. */
export async function deleteEndedRun(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  runId: string,
): Promise<"deleted" | "active" | "missing"> {
  const [row] = await q<{ deleted: boolean; found: boolean }[]>`
    with target as (
      select run_id, status from agent_runs
      where workspace_id = ${workspaceId} and thread_id = ${threadId} and run_id = ${runId}
    ), removed as (
      delete from agent_runs r using target t
      where r.workspace_id = ${workspaceId} and r.run_id = t.run_id and t.status not in ('pending', 'running')
      returning r.run_id
    )
    select exists (select 1 from removed) as deleted, (select count(*) from target) > 0 as found`;
  if (row?.deleted) return "deleted";
  return row?.found ? "active" : "missing";
}

/** Deletes a run whatever its state (rollback); true when it existed. */
export async function deleteRun(q: Queryable, workspaceId: string, runId: string): Promise<boolean> {
  const rows =
    await q`delete from agent_runs where workspace_id = ${workspaceId} and run_id = ${runId} returning 1`;
  return rows.length > 0;
}

/** A claimed run: the record as running, and the token every write of the attempt must name. */
export interface RunClaim {
  run: AgentRunRecord;
  leaseToken: string;
  /** The run's thread or assistant was deleted: the run must stop. */
  orphaned: boolean;
}

/** True (in a statement on `agent_runs r`) when the run's thread or assistant no longer exists. */
function orphaned(q: Queryable) {
  return q`(not exists (select 1 from threads t where t.workspace_id = r.workspace_id and t.thread_id = r.thread_id)
    or not exists (select 1 from assistants a where a.workspace_id = r.workspace_id and a.assistant_id = r.assistant_id))`;
}

/**
 * Starts an attempt of a pending run when it is the head of its thread's queue: no run of the
 * thread is running and no earlier pending run may start. One statement (the function
 * `agentplane_claim_run` of migration 0036), which locks the thread's queue ({@link lockThreadQueue})
 * itself before it looks at the queue: it needs no transaction around it. Undefined when the run is
 * not pending, not due, not on `threadId`, or must wait.
 */
export async function claimRun(
  q: Queryable,
  claim: {
    workspaceId: string;
    threadId: string;
    runId: string;
    owner: string;
    leaseToken: string;
    leaseSeconds: number;
  },
): Promise<RunClaim | undefined> {
  // Whether the thread or assistant is gone is read as the statement starts, before the lock: a
  // deletion committed later stops the attempt through its trigger's notice and the heartbeat.
  const [row] = await q<(RunRow & { orphaned: boolean })[]>`
    select r.*, ${orphaned(q)} as orphaned
    from agentplane_claim_run(${claim.workspaceId}::uuid, ${claim.runId}::uuid, ${claim.threadId}::uuid,
      ${claim.owner}, ${claim.leaseToken}::uuid, ${claim.leaseSeconds}::float8) r`;
  return row && { run: runRecordOf(row), leaseToken: claim.leaseToken, orphaned: row.orphaned };
}

/** The pending run that may start next on a thread (its queue's head), if any. */
export async function headOfThreadQueue(
  q: Queryable,
  workspaceId: string,
  threadId: string,
): Promise<{ runId: string; notBefore: Date } | undefined> {
  const [row] = await q<{ run_id: string; not_before: Date; running: boolean }[]>`
    select run_id, not_before,
      exists (select 1 from agent_runs o where o.workspace_id = ${workspaceId} and o.thread_id = ${threadId}
              and o.status = 'running') as running
    from agent_runs
    where workspace_id = ${workspaceId} and thread_id = ${threadId} and status = 'pending'
    order by (not_before > now()), run_id
    limit 1`;
  if (!row || row.running) return undefined;
  return { runId: row.run_id, notBefore: row.not_before };
}

/** What a lease renewal learns: a cancel asked of the run, if any. */
export interface LeaseState {
  cancelAction: CancelAction | null;
  /** The run's thread or assistant was deleted: the run must stop. */
  orphaned: boolean;
}

/** Extends the attempt's lease; undefined when the attempt no longer holds it. */
export async function renewRunLease(
  q: Queryable,
  runId: string,
  leaseToken: string,
  leaseSeconds: number,
): Promise<LeaseState | undefined> {
  const [row] = await q<{ cancel_action: CancelAction | null; orphaned: boolean }[]>`
    update agent_runs r set lease_expires_at = now() + make_interval(secs => ${leaseSeconds}::float8)
    where r.run_id = ${runId} and r.lease_token = ${leaseToken} and r.status = 'running'
    returning r.cancel_action, ${orphaned(q)} as orphaned`;
  return row && { cancelAction: row.cancel_action, orphaned: row.orphaned };
}

/**
 * Ends the attempt's run with `status` and `output`; false when the attempt no longer holds the
 * lease (another attempt took the run over, or it was deleted), so a run never ends twice.
 */
export async function finishRun(
  q: Queryable,
  runId: string,
  leaseToken: string,
  end: { status: RunStatus; output: JsonValue },
): Promise<boolean> {
  const rows = await q`
    update agent_runs set status = ${end.status}, output = ${q.json(end.output)}, ended_at = now(),
      updated_at = now(), lease_owner = null, lease_token = null, lease_expires_at = null
    where run_id = ${runId} and lease_token = ${leaseToken} and status = 'running'
    returning 1`;
  return rows.length > 0;
}

/**
 * Hands a run back to the queue (a worker that stops before the run ends): pending again, the
 * attempt not counted. False when the attempt no longer holds the lease.
 */
export async function releaseRun(q: Queryable, runId: string, leaseToken: string): Promise<boolean> {
  const rows = await q`
    update agent_runs set status = 'pending', attempt = greatest(attempt - 1, 0), updated_at = now(),
      lease_owner = null, lease_token = null, lease_expires_at = null
    where run_id = ${runId} and lease_token = ${leaseToken} and status = 'running'
    returning 1`;
  return rows.length > 0;
}

/** A run whose lease lapsed and that went back to pending. */
export interface LapsedRun {
  workspaceId: string;
  runId: string;
  threadId: string;
  attempt: number;
}

/**
 * Puts running runs whose lease lapsed (their worker died) back to pending, at most `limit`;
 * rows another sweeper is handling are skipped.
 */
export async function releaseLapsedRuns(q: Queryable, limit: number): Promise<LapsedRun[]> {
  const rows = await q<{ workspace_id: string; run_id: string; thread_id: string; attempt: number }[]>`
    update agent_runs r set status = 'pending', lease_owner = null, lease_token = null,
      lease_expires_at = null, updated_at = now()
    from (
      select workspace_id, run_id from agent_runs
      where status = 'running' and lease_expires_at < now()
      order by lease_expires_at limit ${limit}
      for update skip locked
    ) lapsed
    where r.workspace_id = lapsed.workspace_id and r.run_id = lapsed.run_id
    returning r.workspace_id, r.run_id, r.thread_id, r.attempt`;
  return rows.map((r) => ({
    workspaceId: r.workspace_id,
    runId: r.run_id,
    threadId: r.thread_id,
    attempt: r.attempt,
  }));
}

/** Pending runs that are due and head their thread's queue, for the dispatcher's safety net. */
export async function dueQueueHeads(
  q: Queryable,
  olderThanSeconds: number,
  limit: number,
): Promise<{ workspaceId: string; runId: string; threadId: string }[]> {
  const rows = await q<{ workspace_id: string; run_id: string; thread_id: string }[]>`
    select distinct on (r.workspace_id, r.thread_id) r.workspace_id, r.run_id, r.thread_id
    from agent_runs r
    where r.status = 'pending' and r.not_before <= now()
      and r.updated_at < now() - make_interval(secs => ${olderThanSeconds}::float8)
      and not exists (select 1 from agent_runs o where o.workspace_id = r.workspace_id
                      and o.thread_id = r.thread_id and o.status = 'running')
    order by r.workspace_id, r.thread_id, r.run_id
    limit ${limit}`;
  return rows.map((r) => ({ workspaceId: r.workspace_id, runId: r.run_id, threadId: r.thread_id }));
}

/** Marks runs to stop (running) or stops them (pending); see {@link cancelRuns}. */
export interface CancelOutcome {
  runId: string;
  threadId: string;
  /** The status before the cancel. */
  previous: RunStatus;
  /** The run's webhook URL, if it has one. */
  webhook: string | null;
  /** Whether it is a run of the thread-centric streaming protocol (its stream ends with a lifecycle event). */
  protocol: boolean;
  /** Its graph. */
  graphId: string;
}

/**
 * Cancels runs of the workspace: a pending run ends `interrupted` at once (a rollback deletes
 * it), a running one is asked to stop with `action` (its worker ends it). Runs that already
 * ended are left alone and not returned.
 */
export async function cancelRuns(
  q: Queryable,
  workspaceId: string,
  runIds: readonly string[],
  action: CancelAction,
  reason: string,
): Promise<CancelOutcome[]> {
  const rows = await q<
    {
      run_id: string;
      thread_id: string;
      graph_id: string;
      previous: RunStatus;
      webhook: string | null;
      protocol: boolean;
    }[]
  >`
    with target as (
      select run_id, thread_id, graph_id, status, kwargs ->> 'webhook' as webhook,
        coalesce((kwargs ->> 'protocol')::boolean, false) as protocol
      from agent_runs
      where workspace_id = ${workspaceId} and run_id = any(${runIds as string[]}::uuid[])
        and status in ('pending', 'running')
      for update
    ), stopped as (
      update agent_runs r set status = 'interrupted', ended_at = now(), updated_at = now(),
        cancel_action = ${action}, cancel_reason = ${reason}
      from target t
      where r.workspace_id = ${workspaceId} and r.run_id = t.run_id and t.status = 'pending'
      returning r.run_id
    ), asked as (
      update agent_runs r set cancel_action = ${action}, cancel_reason = ${reason}, updated_at = now()
      from target t
      where r.workspace_id = ${workspaceId} and r.run_id = t.run_id and t.status = 'running'
      returning r.run_id
    )
    select run_id, thread_id, graph_id, status as previous, webhook, protocol from target`;
  return rows.map((r) => ({
    runId: r.run_id,
    threadId: r.thread_id,
    previous: r.previous,
    webhook: r.webhook,
    protocol: r.protocol,
    graphId: r.graph_id,
  }));
}

/**
 * Ids of the workspace's runs with one of `statuses`, oldest first, at most `limit`; with `auth`
 * (custom auth's filter), only runs of threads whose metadata passes it.
 */
export async function runIdsWithStatus(
  q: Queryable,
  workspaceId: string,
  statuses: readonly RunStatus[],
  limit: number,
  auth?: AuthFilter,
): Promise<string[]> {
  const rows = await q<{ run_id: string }[]>`
    select r.run_id from agent_runs r
    where r.workspace_id = ${workspaceId} and r.status = any(${statuses as RunStatus[]}::text[])
      ${
        auth
          ? q`and exists (select 1 from threads t where t.workspace_id = r.workspace_id
                and t.thread_id = r.thread_id and (${authFilterSql(q, "t.metadata", auth)}))`
          : q``
      }
    order by r.run_id limit ${limit}`;
  return rows.map((r) => r.run_id);
}

/** The distinct threads of the workspace's runs `runIds`. */
export async function threadsOfRuns(
  q: Queryable,
  workspaceId: string,
  runIds: readonly string[],
): Promise<string[]> {
  const rows = await q<{ thread_id: string }[]>`
    select distinct thread_id from agent_runs
    where workspace_id = ${workspaceId} and run_id = any(${runIds as string[]}::uuid[])`;
  return rows.map((r) => r.thread_id);
}

/**
 * Deletes stateless runs that ended more than `afterSeconds` ago, at most `limit` (their thread is
 * gone; the row only served wait and join); returns how many.
 */
export async function sweepTemporaryRuns(q: Queryable, afterSeconds: number, limit: number): Promise<number> {
  const rows = await q`
    delete from agent_runs where (workspace_id, run_id) in (
      select workspace_id, run_id from agent_runs
      where temporary and status not in ('pending', 'running')
        and ended_at < now() - make_interval(secs => ${afterSeconds}::float8)
      limit ${limit})
    returning 1`;
  return rows.length;
}

/** When an ended run started, ended and was last updated (its end). */
export interface RunEndTimes {
  startedAt: Date | null;
  endedAt: Date;
  updatedAt: Date;
}

/**
 * The config of the thread's newest run (its `kwargs.config`: the assistant's, the thread's and
 * the request's merged), or undefined when the thread has had no run.
 */
export async function newestRunConfig(
  q: Queryable,
  workspaceId: string,
  threadId: string,
): Promise<JsonObject | undefined> {
  const [row] = await q<{ config: JsonValue | null }[]>`
    select kwargs -> 'config' as config from agent_runs
    where workspace_id = ${workspaceId} and thread_id = ${threadId}
    order by created_at desc, run_id desc
    limit 1`;
  const config = row?.config;
  return typeof config === "object" && config !== null && !Array.isArray(config) ? config : undefined;
}
