-- Runs of the Agent Server: one row per execution of a graph on a thread. The row is the source of
-- truth for a run's state; pg-boss jobs only wake workers. A worker owns a running run through a
-- lease (owner, token, expiry) that it renews while it works; a run whose lease lapsed is handed to
-- another worker, and every write of an attempt is conditional on its lease token, so two attempts
-- can never both finish a run.

create table agent_runs (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  run_id uuid not null,
  thread_id uuid not null,
  assistant_id uuid not null,
  graph_id text not null,
  status text not null default 'pending'
    check (status in ('pending', 'running', 'error', 'success', 'timeout', 'interrupted')),
  metadata jsonb not null default '{}',
  -- The stored create payload (input, command, config, context, stream_mode, ...).
  kwargs jsonb not null,
  multitask_strategy text not null check (multitask_strategy in ('reject', 'interrupt', 'rollback', 'enqueue')),
  -- A stateless run with on_completion=delete: its thread is deleted when it ends.
  temporary boolean not null default false,
  -- Attempts started so far; a lapsed lease starts another until the limit.
  attempt integer not null default 0,
  lease_owner text,
  lease_token uuid,
  lease_expires_at timestamptz,
  -- A cancel asked while the run was running: the owner stops it with this action.
  cancel_action text check (cancel_action in ('interrupt', 'rollback')),
  -- What wait and join answer: the final values, or {"__error__": {error, message}}.
  output jsonb,
  -- Not started before this time (after_seconds).
  not_before timestamptz not null default now(),
  started_at timestamptz,
  ended_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (workspace_id, run_id)
);

-- A thread's queue: its unfinished runs in arrival order (uuidv7 ids sort by creation).
create index agent_runs_thread_active_idx on agent_runs (workspace_id, thread_id, run_id)
  where status in ('pending', 'running');
-- Listing a thread's runs, newest first.
create index agent_runs_thread_idx on agent_runs (workspace_id, thread_id, created_at desc);
-- The lease sweeper looks for running runs whose lease lapsed.
create index agent_runs_lease_idx on agent_runs (lease_expires_at) where status = 'running';
-- The dispatcher looks for pending runs whose start time came.
create index agent_runs_pending_idx on agent_runs (not_before) where status = 'pending';

-- Stream events of runs, written as they happen so that any process can stream any run and a
-- client can resume after a disconnect. `seq` orders every event; an event id is `<ms>-<seq>`.
-- An internal `__end__` event marks the end of a run's stream. Events are swept once `expires_at`
-- (set when the run ends: the resumable-stream TTL) has passed.
create table agent_run_events (
  seq bigint generated always as identity primary key,
  workspace_id uuid not null,
  run_id uuid not null,
  thread_id uuid not null,
  -- Milliseconds since the epoch when the event was produced: the first part of its id.
  ms bigint not null,
  event text not null,
  -- The event's data as JSON text: never queried, only sent.
  data text not null,
  expires_at timestamptz
);

create index agent_run_events_run_idx on agent_run_events (run_id, seq);
create index agent_run_events_thread_idx on agent_run_events (thread_id, seq);
create index agent_run_events_expires_idx on agent_run_events (expires_at) where expires_at is not null;
