-- Crons of the Agent Server: a schedule that creates a run each time it comes due, on its thread or
-- (stateless, thread_id null) on a new thread. `payload` is the body of the run create each firing
-- makes. `next_run_date` is when it fires next (null once past its end time); a tick locks due rows
-- with `for update skip locked`, creates their runs and moves `next_run_date` past now in the same
-- transaction, so a cron fires once per tick whatever the number of processes, and once (not once
-- per missed tick) after downtime. A deleted assistant or thread takes its crons with it.

create table agent_crons (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  cron_id uuid not null,
  assistant_id uuid not null,
  thread_id uuid,
  -- Five-field cron expression, read in `timezone` (IANA; null = UTC).
  schedule text not null,
  timezone text,
  end_time timestamptz,
  enabled boolean not null default true,
  -- Stateless crons: whether each run's thread is deleted or kept after the run; null on thread crons.
  on_run_completed text check (on_run_completed in ('delete', 'keep')),
  payload jsonb not null,
  metadata jsonb not null default '{}',
  user_id text,
  next_run_date timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (workspace_id, cron_id),
  foreign key (workspace_id, assistant_id) references assistants (workspace_id, assistant_id) on delete cascade,
  foreign key (workspace_id, thread_id) references threads (workspace_id, thread_id) on delete cascade,
  check ((thread_id is null) = (on_run_completed is not null))
);

-- The tick looks for enabled crons whose time came.
create index agent_crons_due_idx on agent_crons (next_run_date) where enabled;
-- Deleting an assistant or a thread finds its crons; searches filter by them.
create index agent_crons_assistant_idx on agent_crons (workspace_id, assistant_id);
create index agent_crons_thread_idx on agent_crons (workspace_id, thread_id) where thread_id is not null;
-- Searches default to newest first.
create index agent_crons_created_idx on agent_crons (workspace_id, created_at desc);
