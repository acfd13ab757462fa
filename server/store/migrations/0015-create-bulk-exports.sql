-- Bulk export: S3 destinations, exports (one-off, scheduled, and the exports a schedule spawns) and
-- export runs, one per UTC day of an export's range. Statuses are stored as the API shows them.

create table bulk_export_destinations (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  destination_type text not null check (destination_type = 's3'),
  display_name text not null,
  bucket_name text not null,
  prefix text not null default '',
  region text,
  endpoint_url text,
  include_bucket_in_prefix boolean not null default false,
  -- The credentials as AES-256-GCM sealed JSON (server/export/secret-box.ts); null means the
  -- standard AWS environment credential chain of the process that exports.
  credentials_sealed bytea,
  -- Names of the stored credential fields (never their values), as the API shows them.
  credentials_keys text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- Set by DeleteDestination: the row stays for the exports that name it, which then fail.
  deleted_at timestamptz
);
-- Lets exports reference (workspace_id, destination_id): an export cannot name another workspace's destination.
create unique index bulk_export_destinations_workspace_id_key on bulk_export_destinations (workspace_id, id);

create table bulk_exports (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  destination_id uuid not null,
  session_id uuid not null,
  start_time timestamptz not null,
  -- Exclusive; null for a schedule.
  end_time timestamptz,
  filter text,
  -- null: every exportable field.
  export_fields text[],
  -- Set on a schedule only.
  interval_hours integer check (interval_hours between 1 and 168),
  format_version text not null,
  compression text not null,
  status text not null check (
    status in ('Created', 'Running', 'Completed', 'Failed', 'Cancelled', 'TimedOut', 'IntervalScheduled')
  ),
  -- The schedule that spawned this export.
  source_bulk_export_id uuid references bulk_exports (id) on delete set null,
  -- A schedule's next window to spawn: [next_window_start, next_window_start + interval_hours).
  next_window_start timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz,
  check ((interval_hours is null) = (end_time is not null)),
  foreign key (workspace_id, destination_id) references bulk_export_destinations (workspace_id, id),
  foreign key (workspace_id, session_id) references tracing_projects (workspace_id, id) on delete cascade
);
create unique index bulk_exports_workspace_id_key on bulk_exports (workspace_id, id);
create index bulk_exports_workspace_created_idx on bulk_exports (workspace_id, created_at desc, id desc);
-- A schedule spawns each window once, whichever process spawns it.
create unique index bulk_exports_spawned_window_key on bulk_exports (source_bulk_export_id, start_time)
  where source_bulk_export_id is not null;
-- What the maintenance job scans: unfinished exports and live schedules.
create index bulk_exports_open_idx on bulk_exports (status, workspace_id)
  where status in ('Created', 'Running', 'IntervalScheduled');

create table bulk_export_runs (
  id uuid primary key,
  workspace_id uuid not null,
  bulk_export_id uuid not null,
  -- The partition: [start_time, end_time) within one UTC day.
  start_time timestamptz not null,
  end_time timestamptz not null,
  status text not null check (
    status in ('Created', 'Running', 'Completed', 'Failed', 'Cancelled', 'TimedOut')
  ),
  -- Failed attempts so far; each one's error is in errors as retry_<n>.
  retry_number integer not null default 0,
  errors jsonb not null default '{}',
  -- Checkpoint, written only after a file is in the bucket: rows and files so far, and the keyset
  -- position (start_time, id) of the last row written.
  rows_written bigint not null default 0,
  -- [{key, rows, bytes, sha256}] in write order.
  files jsonb not null default '[]',
  cursor_start_time timestamptz,
  cursor_id uuid,
  -- Object key of the manifest, once written.
  manifest_key text,
  -- When the dispatcher handed the run to the queue; null while it waits for capacity.
  queued_at timestamptz,
  -- The attempt that holds the run: a fresh token per claim, renewed by heartbeats.
  lease_token uuid,
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  foreign key (workspace_id, bulk_export_id) references bulk_exports (workspace_id, id) on delete cascade,
  check (end_time > start_time)
);
create index bulk_export_runs_export_idx on bulk_export_runs (bulk_export_id, start_time);
create index bulk_export_runs_lease_idx on bulk_export_runs (lease_expires_at) where status = 'Running';
create index bulk_export_runs_waiting_idx on bulk_export_runs (workspace_id)
  where status = 'Created' and queued_at is null;
