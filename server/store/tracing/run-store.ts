import { batchRows, type RunWriteOptions } from "../batching/run-batch.js";
import type { Queryable } from "../db.js";
import type { RunRow } from "./run-row.js";
import type { NormalizedFeedback } from "./trace-rows.js";
import type { WorkspaceBound } from "./workspace-scope.js";

export type { RunWriteOptions } from "../batching/run-batch.js";

export type { RunRow } from "./run-row.js";

/** Who sent a batch: recorded on the runs it creates. */
export interface RunSender {
  userId: string | null;
  apiKeyId: string | null;
}

/** A run a write touched. */
export interface WrittenRun {
  id: string;
  sessionId: string;
  traceId: string;
  isRoot: boolean;
  receivedAt: Date;
  /** True when this write created the row (not a re-send or a merge into a stored run). */
  inserted: boolean;
}

/** An attachment of a run: multipart `attachment.<run_id>.<name>`. */
export interface RunAttachment {
  runId: string;
  name: string;
  contentType: string;
  data: Uint8Array;
}

interface WrittenRow {
  id: string;
  session_id: string;
  trace_id: string;
  is_root: boolean;
  received_at: Date;
  inserted: boolean;
}

/**
 * The usage columns a root run keeps its own values in (migration 0017): its total_tokens, ...,
 * first_token_time hold its trace's totals (trace-rollup-store.ts).
 */
const OWN_USAGE = [
  "total_tokens",
  "prompt_tokens",
  "completion_tokens",
  "total_cost",
  "prompt_cost",
  "completion_cost",
  "first_token_time",
] as const;

/**
 * The SQL text of the own_* lists and merges, built once from constant column names: the upserts
 * are written per batch, and as nested fragments these lists were most of each statement's
 * building in the driver.
 */
const OWN_SQL = {
  columns: OWN_USAGE.map((c) => `own_${c}`).join(", "),
  /** A new row's own_* values: the sent ones on a root run, null on the others. */
  values: OWN_USAGE.map((c) => `case when is_root then ${c} end`).join(", "),
  /**
   * The own_* merge of a root run, by the same rule as the other usage columns: a post fills what
   * is unset, a patch overrides with what it carries. Non-root runs keep them null.
   */
  post: OWN_USAGE.map(
    (c) => `own_${c} = case when excluded.is_root then coalesce(runs.own_${c}, excluded.${c}) end`,
  ).join(", "),
  patch: OWN_USAGE.map(
    (c) => `own_${c} = case when runs.is_root then coalesce(excluded.${c}, runs.own_${c}) end`,
  ).join(", "),
};

/**
 * A run's end time as stored: never before its start (migration 0034). The langsmith JS SDK sends
 * start_time with its dotted_order's microseconds, which count runs within a millisecond, and
 * end_time in milliseconds: an end inside the start's millisecond is, at the end's precision, the
 * same instant, and is stored as the start; so is any other end before the start, whose latency
 * would otherwise be negative everywhere it is read. Null stays null.
 */
function endNotBeforeStart(end: string, start: string): string {
  return `case when ${end} < ${start} then ${start} else ${end} end`;
}

/** The end_time of a new row, from the batch's `excluded` row. */
const INSERTED_END = endNotBeforeStart("end_time", "start_time");
/** The end_time of a stored run a post merges into: the posted start is the run's start. */
const POSTED_END = endNotBeforeStart("coalesce(runs.end_time, excluded.end_time)", "excluded.start_time");
/** The end_time of a stored run a patch merges into: the stored start stays. */
const PATCHED_END = endNotBeforeStart("coalesce(excluded.end_time, runs.end_time)", "runs.start_time");

/**
 * A new row's status as the `runs_derive_status` trigger derives it (migration 0006), so that the
 * trigger, which runs only when the row's status differs from this (migration 0023), is not called.
 */
const DERIVED_STATUS =
  "case when error is not null then 'error' when end_time is not null then 'success' else 'pending' end";

function insertRuns(
  q: Queryable,
  workspaceId: string,
  sender: RunSender,
  rows: readonly RunRow[],
  options: RunWriteOptions,
) {
  return q`
    insert into runs (
      id, workspace_id, session_id, trace_id, parent_run_id, parent_run_ids, reference_example_id, name,
      run_type, start_time, end_time, status, is_root, dotted_order, trace_tier, inputs, outputs, error,
      extra, events, serialized, tags, total_tokens, prompt_tokens, completion_tokens, total_cost,
      prompt_cost, completion_cost, first_token_time, user_id, api_key_id, ${q.unsafe(OWN_SQL.columns)})
    select
      id, ${workspaceId}::uuid, session_id, trace_id, parent_run_id, parent_run_ids, reference_example_id, name,
      run_type, start_time, ${q.unsafe(INSERTED_END)}, ${q.unsafe(DERIVED_STATUS)}, is_root, dotted_order, trace_tier, inputs, outputs, error,
      extra, events, serialized, tags, total_tokens, prompt_tokens, completion_tokens, total_cost,
      prompt_cost, completion_cost, first_token_time, ${sender.userId}::uuid, ${sender.apiKeyId}::uuid,
      ${q.unsafe(OWN_SQL.values)}
    from ${batchRows(q, rows, options)}
    order by id`;
}

/**
 * Stores posted runs (creates). A post is authoritative for what a run is (project, name, type,
 * position, start, inputs) and fills what a patch did not already set (end_time, outputs, error,
 * events, tokens, tags); `extra` is merged with the stored keys winning. So a re-sent post changes
 * nothing and a post after its patch keeps the patch's end data. Rows must have distinct ids.
 */
export async function upsertPostedRuns(
  q: WorkspaceBound,
  workspaceId: string,
  sender: RunSender,
  rows: readonly RunRow[],
  options: RunWriteOptions = {},
): Promise<WrittenRun[]> {
  if (rows.length === 0) return [];
  const written = await q<WrittenRow[]>`
    ${insertRuns(q, workspaceId, sender, rows, options)}
    on conflict (workspace_id, id) do update set
      session_id = excluded.session_id,
      trace_id = excluded.trace_id,
      parent_run_id = excluded.parent_run_id,
      parent_run_ids = excluded.parent_run_ids,
      is_root = excluded.is_root,
      dotted_order = excluded.dotted_order,
      name = excluded.name,
      run_type = excluded.run_type,
      start_time = excluded.start_time,
      inputs = coalesce(excluded.inputs, runs.inputs),
      serialized = coalesce(excluded.serialized, runs.serialized),
      reference_example_id = coalesce(excluded.reference_example_id, runs.reference_example_id),
      trace_tier = coalesce(runs.trace_tier, excluded.trace_tier),
      end_time = ${q.unsafe(POSTED_END)},
      outputs = coalesce(runs.outputs, excluded.outputs),
      error = coalesce(runs.error, excluded.error),
      events = coalesce(runs.events, excluded.events),
      extra = tracing_merge_extra(excluded.extra, runs.extra),
      tags = case when cardinality(runs.tags) > 0 then runs.tags else excluded.tags end,
      total_tokens = coalesce(runs.total_tokens, excluded.total_tokens),
      prompt_tokens = coalesce(runs.prompt_tokens, excluded.prompt_tokens),
      completion_tokens = coalesce(runs.completion_tokens, excluded.completion_tokens),
      total_cost = coalesce(runs.total_cost, excluded.total_cost),
      prompt_cost = coalesce(runs.prompt_cost, excluded.prompt_cost),
      completion_cost = coalesce(runs.completion_cost, excluded.completion_cost),
      first_token_time = coalesce(runs.first_token_time, excluded.first_token_time),
      ${q.unsafe(OWN_SQL.post)},
      updated_at = now()
    returning id, session_id, trace_id, is_root, received_at, (xmax = 0) as inserted`;
  return written.map(toWritten);
}

/**
 * The merge of a patch (update) into a stored run: the patch overrides end_time, outputs, error,
 * events, tokens, trace_tier and non-empty tags, and its `extra` keys win; what a run is (project,
 * name, type, position, start, inputs) stays as stored.
 */
function patchAssignments(q: Queryable) {
  return q`
    end_time = ${q.unsafe(PATCHED_END)},
    outputs = coalesce(excluded.outputs, runs.outputs),
    error = coalesce(excluded.error, runs.error),
    events = coalesce(excluded.events, runs.events),
    inputs = coalesce(runs.inputs, excluded.inputs),
    serialized = coalesce(runs.serialized, excluded.serialized),
    reference_example_id = coalesce(runs.reference_example_id, excluded.reference_example_id),
    trace_tier = coalesce(excluded.trace_tier, runs.trace_tier),
    extra = tracing_merge_extra(runs.extra, excluded.extra),
    tags = case when cardinality(excluded.tags) > 0 then excluded.tags else runs.tags end,
    total_tokens = coalesce(excluded.total_tokens, runs.total_tokens),
    prompt_tokens = coalesce(excluded.prompt_tokens, runs.prompt_tokens),
    completion_tokens = coalesce(excluded.completion_tokens, runs.completion_tokens),
    total_cost = coalesce(excluded.total_cost, runs.total_cost),
    prompt_cost = coalesce(excluded.prompt_cost, runs.prompt_cost),
    completion_cost = coalesce(excluded.completion_cost, runs.completion_cost),
    first_token_time = coalesce(excluded.first_token_time, runs.first_token_time),
    ${q.unsafe(OWN_SQL.patch)},
    updated_at = now()`;
}

/**
 * Stores patches that carry their dotted_order: merged into the stored run, or creating it when
 * the patch arrives before its post (the post then fills in what the patch lacked).
 */
export async function upsertPatchedRuns(
  q: WorkspaceBound,
  workspaceId: string,
  sender: RunSender,
  rows: readonly RunRow[],
  options: RunWriteOptions = {},
): Promise<WrittenRun[]> {
  if (rows.length === 0) return [];
  const written = await q<WrittenRow[]>`
    ${insertRuns(q, workspaceId, sender, rows, options)}
    on conflict (workspace_id, id) do update set ${patchAssignments(q)}
    returning id, session_id, trace_id, is_root, received_at, (xmax = 0) as inserted`;
  return written.map(toWritten);
}

/**
 * Merges patches into stored runs only; returns the runs that exist (id and trace). The runs are
 * also named by an id list: joined only to the batch's rows, whose count the planner cannot know,
 * the update read every run of the workspace (a sequential scan, 12 ms at 10,000 runs, growing
 * with the table); by the list it reads them through the primary key.
 */
export async function updatePatchedRuns(
  q: WorkspaceBound,
  workspaceId: string,
  rows: readonly RunRow[],
  options: RunWriteOptions = {},
): Promise<{ id: string; traceId: string }[]> {
  if (rows.length === 0) return [];
  const updated = await q<{ id: string; trace_id: string }[]>`
    update runs set ${patchAssignments(q)}
    from ${batchRows(q, rows, options)}
    where runs.workspace_id = ${workspaceId} and runs.id = any(${rows.map((r) => r.id)}::uuid[])
      and runs.id = excluded.id
    returning runs.id, runs.trace_id`;
  return updated.map((r) => ({ id: r.id, traceId: r.trace_id }));
}

/** Stores feedback items; a re-sent item (same id) changes nothing. Returns the ids stored now. */
export async function insertFeedback(
  q: WorkspaceBound,
  workspaceId: string,
  items: readonly NormalizedFeedback[],
): Promise<string[]> {
  if (items.length === 0) return [];
  const records = items.map((f) => ({
    id: f.id,
    run_id: f.runId,
    trace_id: f.traceId,
    key: f.key,
    score: f.score,
    value: f.value,
    comment: f.comment,
    correction: f.correction,
    feedback_source: f.feedbackSource,
    session_id: f.sessionId,
  }));
  const inserted = await q<{ id: string }[]>`
    insert into run_feedback (
      workspace_id, id, run_id, trace_id, key, score, value, comment, correction, feedback_source, session_id)
    select ${workspaceId}::uuid, id, run_id, trace_id, key, score, value, comment, correction,
      feedback_source, session_id
    from jsonb_to_recordset(${q.json(records as never)}::jsonb) as f (
      id uuid, run_id uuid, trace_id uuid, key text, score double precision, value jsonb, comment text,
      correction jsonb, feedback_source jsonb, session_id uuid)
    on conflict (workspace_id, id) do nothing
    returning id`;
  return inserted.map((r) => r.id);
}

/**
 * Recomputes `feedback_stats` of the given runs from their feedback (see migration 0006 for the
 * shape). Runs without feedback are left as they are, unless `clearEmpty` (after a delete or a
 * move): then their stats become null. Only rows whose stats change are written.
 */
export async function refreshFeedbackStats(
  q: WorkspaceBound,
  workspaceId: string,
  runIds: readonly string[],
  { clearEmpty = false }: { clearEmpty?: boolean } = {},
): Promise<void> {
  if (runIds.length === 0) return;
  const target = clearEmpty
    ? q`(select ids.run_id, stats.stats
          from unnest(${runIds}::uuid[]) as ids (run_id) left join stats on stats.run_id = ids.run_id) as target`
    : q`stats as target`;
  await q`
    with feedback as (
      select run_id, key, score, value from run_feedback
      where workspace_id = ${workspaceId} and run_id = any(${runIds}::uuid[])
    ), per_value as (
      select run_id, key, value #>> '{}' as label, count(*)::int as n
      from feedback where value is not null and value <> 'null'::jsonb
      group by run_id, key, label
    ), per_key as (
      select run_id, key, count(*)::int as n, avg(score) as avg from feedback group by run_id, key
    ), stats as (
      select k.run_id, jsonb_object_agg(k.key, jsonb_build_object(
        'n', k.n,
        'avg', k.avg,
        'values', coalesce(
          (select jsonb_object_agg(v.label, v.n) from per_value v where v.run_id = k.run_id and v.key = k.key),
          '{}'::jsonb))) as stats
      from per_key k group by k.run_id
    )
    update runs set feedback_stats = target.stats
    from ${target}
    where runs.workspace_id = ${workspaceId} and runs.id = target.run_id
      and runs.feedback_stats is distinct from target.stats`;
}

/** Stores attachments; a re-sent attachment replaces the stored one of the same run and name. */
export async function upsertAttachments(
  q: WorkspaceBound,
  workspaceId: string,
  attachments: readonly RunAttachment[],
): Promise<void> {
  for (const a of attachments) {
    await q`
      insert into run_attachments (workspace_id, run_id, name, content_type, size_bytes, data)
      values (${workspaceId}, ${a.runId}, ${a.name}, ${a.contentType}, ${a.data.byteLength}, ${Buffer.from(a.data.buffer, a.data.byteOffset, a.data.byteLength)})
      on conflict (workspace_id, run_id, name) do update set
        content_type = excluded.content_type, size_bytes = excluded.size_bytes, data = excluded.data,
        created_at = now()`;
  }
}

function toWritten(row: WrittenRow): WrittenRun {
  return {
    id: row.id,
    sessionId: row.session_id,
    traceId: row.trace_id,
    isRoot: row.is_root,
    receivedAt: row.received_at,
    inserted: row.inserted,
  };
}
