import type { JsonObject } from "./trace-rows.js";
import type { WorkspaceBound } from "./workspace-scope.js";

/** A span waiting for its parent (migration 0033): the run it becomes, without its position. */
export interface PendingSpan {
  runId: string;
  parentRunId: string;
  /** The OTel trace id as a UUID. */
  otelTraceId: string;
  run: JsonObject;
}

/** The spans waiting in the given OTel traces. */
export async function pendingSpansOfTraces(
  q: WorkspaceBound,
  workspaceId: string,
  otelTraceIds: readonly string[],
): Promise<PendingSpan[]> {
  if (otelTraceIds.length === 0) return [];
  const rows = await q<{ run_id: string; parent_run_id: string; otel_trace_id: string; run: JsonObject }[]>`
    select run_id, parent_run_id, otel_trace_id, run from otel_pending_spans
    where workspace_id = ${workspaceId} and otel_trace_id = any(${[...otelTraceIds]}::uuid[])`;
  return rows.map((r) => ({
    runId: r.run_id,
    parentRunId: r.parent_run_id,
    otelTraceId: r.otel_trace_id,
    run: r.run,
  }));
}

/** Who sent waiting spans: recorded with them, for the runs and usage counts they become. */
export interface PendingSender {
  userId: string | null;
  apiKeyId: string | null;
}

/** Stores spans to wait for their parent; a span sent again replaces the one waiting. */
export async function savePendingSpans(
  q: WorkspaceBound,
  workspaceId: string,
  sender: PendingSender,
  spans: readonly PendingSpan[],
): Promise<void> {
  if (spans.length === 0) return;
  const records = spans.map((s) => ({
    run_id: s.runId,
    parent_run_id: s.parentRunId,
    otel_trace_id: s.otelTraceId,
    run: s.run,
  }));
  await q`
    insert into otel_pending_spans (workspace_id, run_id, parent_run_id, otel_trace_id, run, user_id, api_key_id)
    select ${workspaceId}::uuid, run_id, parent_run_id, otel_trace_id, run, ${sender.userId}::uuid,
      ${sender.apiKeyId}::uuid
    from jsonb_to_recordset(${q.json(records as never)}::jsonb) as s (
      run_id uuid, parent_run_id uuid, otel_trace_id uuid, run jsonb)
    order by run_id
    on conflict (workspace_id, run_id) do update set
      parent_run_id = excluded.parent_run_id, run = excluded.run, user_id = excluded.user_id,
      api_key_id = excluded.api_key_id, received_at = now()`;
}

/** An OTel trace whose waiting spans have waited long enough (see {@link orphanedTraces}). */
export interface OrphanedTrace extends PendingSender {
  workspaceId: string;
  otelTraceId: string;
}

/**
 * Up to `limit` OTel traces, of any workspace, whose newest waiting span arrived more than
 * `waitSeconds` ago, with the sender of their earliest one. Unconfined: a maintenance job's read.
 */
export async function orphanedTraces(
  q: WorkspaceBound,
  waitSeconds: number,
  limit: number,
): Promise<OrphanedTrace[]> {
  const rows = await q<
    { workspace_id: string; otel_trace_id: string; user_id: string | null; api_key_id: string | null }[]
  >`
    select distinct on (p.workspace_id, p.otel_trace_id)
      p.workspace_id, p.otel_trace_id, p.user_id, p.api_key_id
    from otel_pending_spans p
    where p.received_at < now() - make_interval(secs => ${waitSeconds})
      and not exists (
        select 1 from otel_pending_spans n
        where n.workspace_id = p.workspace_id and n.otel_trace_id = p.otel_trace_id
          and n.received_at >= now() - make_interval(secs => ${waitSeconds}))
    order by p.workspace_id, p.otel_trace_id, p.received_at
    limit ${limit}`;
  return rows.map((r) => ({
    workspaceId: r.workspace_id,
    otelTraceId: r.otel_trace_id,
    userId: r.user_id,
    apiKeyId: r.api_key_id,
  }));
}

/** Deletes waiting spans that became runs. */
export async function deletePendingSpans(
  q: WorkspaceBound,
  workspaceId: string,
  runIds: readonly string[],
): Promise<void> {
  if (runIds.length === 0) return;
  await q`
    delete from otel_pending_spans
    where workspace_id = ${workspaceId} and run_id = any(${[...runIds]}::uuid[])`;
}

/** Where a stored run sits in its trace: what a span waiting for it as its parent needs. */
export interface StoredPosition {
  id: string;
  traceId: string;
  dottedOrder: string;
}

/** The positions of the stored runs among `ids`. */
export async function storedPositions(
  q: WorkspaceBound,
  workspaceId: string,
  ids: readonly string[],
): Promise<StoredPosition[]> {
  if (ids.length === 0) return [];
  const rows = await q<{ id: string; trace_id: string; dotted_order: string }[]>`
    select id, trace_id, dotted_order from runs
    where workspace_id = ${workspaceId} and id = any(${[...ids]}::uuid[])`;
  return rows.map((r) => ({ id: r.id, traceId: r.trace_id, dottedOrder: r.dotted_order }));
}

/** Deletes every waiting span of `otelTraceIds`; answers how many there were. */
export async function deletePendingTraces(
  q: WorkspaceBound,
  workspaceId: string,
  otelTraceIds: readonly string[],
): Promise<number> {
  if (otelTraceIds.length === 0) return 0;
  const rows = await q`
    delete from otel_pending_spans
    where workspace_id = ${workspaceId} and otel_trace_id = any(${[...otelTraceIds]}::uuid[])
    returning run_id`;
  return rows.length;
}
