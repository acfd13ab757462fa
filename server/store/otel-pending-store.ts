import type { JsonObject } from "./trace-rows.js";
import type { WorkspaceBound } from "./workspace-scope.js";

/** A span waiting for its parent (migration 0028): the run it becomes, without its position. */
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

/** Stores spans to wait for their parent; a span sent again replaces the one waiting. */
export async function savePendingSpans(
  q: WorkspaceBound,
  workspaceId: string,
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
    insert into otel_pending_spans (workspace_id, run_id, parent_run_id, otel_trace_id, run)
    select ${workspaceId}::uuid, run_id, parent_run_id, otel_trace_id, run
    from jsonb_to_recordset(${q.json(records as never)}::jsonb) as s (
      run_id uuid, parent_run_id uuid, otel_trace_id uuid, run jsonb)
    order by run_id
    on conflict (workspace_id, run_id) do update set
      parent_run_id = excluded.parent_run_id, run = excluded.run, received_at = now()`;
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
