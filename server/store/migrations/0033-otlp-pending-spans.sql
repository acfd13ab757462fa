-- OTLP ingest (issue 27): spans that arrive before their parent.
--
-- An OpenTelemetry SDK exports a span when it ends, so a child is usually sent before its parent
-- (and the root last), often in an earlier request. A run's place in its trace (trace_id, the
-- parents' ids, dotted_order) needs every ancestor, so such a span waits here, as the run it becomes
-- (tracing/otlp/span-draft.ts), until its parent is stored: the batch that stores the parent (from
-- any process) writes the waiting descendants as runs in the same transaction and deletes them here.
-- Batches of one OTel trace take an advisory lock on it first (LOCK_SEED.otelTrace), so a parent
-- and its child arriving at once in two requests cannot each miss the other. A parent that is never
-- sent (sampled out upstream, a service that is not instrumented, an exporter that gave up) would
-- leave its spans waiting for ever: a sweeper (jobs/otel-orphan-sweep-job.ts) stores the spans of a
-- trace that has had no new waiting span for a while as runs of their own, found by their age, and
-- recorded as sent by whoever sent them (as the runs and the usage counts of any ingest are).
create table otel_pending_spans (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  -- The run the span becomes; its parent's run id (a waiting span always has a parent).
  run_id uuid not null,
  parent_run_id uuid not null,
  -- The OTel trace id (16 bytes, as a uuid): how a batch finds the waiting spans of its traces.
  otel_trace_id uuid not null,
  -- The run as the ingest takes it (runs.Run JSON), without its position.
  run jsonb not null,
  -- Who sent the span (null for service keys' users, and in-process callers).
  user_id uuid,
  api_key_id uuid,
  received_at timestamptz not null default now(),
  primary key (workspace_id, run_id)
);
create index otel_pending_spans_trace_idx on otel_pending_spans (workspace_id, otel_trace_id);
create index otel_pending_spans_received_idx on otel_pending_spans (received_at);

-- Scoped like the other tracing tables (migration 0020).
alter table otel_pending_spans enable row level security;
create policy workspace_scope on otel_pending_spans to agentplane_tenant
  using (workspace_id = any ((select agentplane_workspace_ids())::uuid[]))
  with check (workspace_id = any ((select agentplane_workspace_ids())::uuid[]));
grant select, insert, update, delete on otel_pending_spans to agentplane_tenant;
