-- Tracing: projects (LangSmith "tracer sessions"), their runs (one row per trace record, i.e. span),
-- run feedback and run attachments. The shared storage contract of ingest, queries, usage and export.

create table tracing_projects (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  name text not null,
  description text,
  -- The project's `extra.metadata`; the rest of `extra` sits in `extra`.
  metadata jsonb not null default '{}',
  extra jsonb not null default '{}',
  reference_dataset_id uuid,
  default_dataset_id uuid,
  trace_tier text,
  start_time timestamptz not null default now(),
  end_time timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, name)
);
-- Lets runs reference (workspace_id, session_id), so a run can never point at another workspace's project.
create unique index tracing_projects_workspace_id_key on tracing_projects (workspace_id, id);

create table runs (
  id uuid not null,
  -- The export's tenant_id.
  workspace_id uuid not null references workspaces (id) on delete cascade,
  -- The tracing project (foreign key below, scoped to the workspace); deleting a project deletes its runs.
  session_id uuid not null,
  trace_id uuid not null,
  parent_run_id uuid,
  -- Ancestors from the root down to the parent (empty for a root), from dotted_order.
  parent_run_ids uuid[] not null default '{}',
  reference_example_id uuid,
  name text not null,
  run_type text not null,
  start_time timestamptz not null,
  end_time timestamptz,
  -- Derived by runs_derive_status: error set → error, end_time set → success, else pending.
  status text not null check (status in ('pending', 'success', 'error')),
  is_root boolean not null,
  dotted_order text not null,
  trace_tier text,
  inputs jsonb,
  outputs jsonb,
  error text,
  -- `metadata` is extra->'metadata' (filters read it there).
  extra jsonb,
  events jsonb,
  serialized jsonb,
  tags text[] not null default '{}',
  -- {key: {n, avg, values}}: see run_feedback below.
  feedback_stats jsonb,
  total_tokens bigint,
  prompt_tokens bigint,
  completion_tokens bigint,
  total_cost numeric,
  prompt_cost numeric,
  completion_cost numeric,
  first_token_time timestamptz,
  -- When the run was first received; never changed by later posts or patches.
  received_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- The user of the personal key that first sent the run (null for service keys).
  user_id uuid,
  -- The key that first sent the run (null with AGENTPLANE_AUTH=none or in-process ingest).
  api_key_id uuid,
  primary key (workspace_id, id),
  foreign key (workspace_id, session_id) references tracing_projects (workspace_id, id) on delete cascade
);
create index runs_session_start_idx on runs (workspace_id, session_id, start_time desc);
create index runs_trace_idx on runs (workspace_id, trace_id);
create index runs_parent_idx on runs (workspace_id, parent_run_id);
create index runs_tags_idx on runs using gin (tags);

-- Status is derived from the merged row, whichever of post and patch arrived first.
create function runs_derive_status() returns trigger language plpgsql as $$
begin
  new.status := case
    when new.error is not null then 'error'
    when new.end_time is not null then 'success'
    else 'pending'
  end;
  return new;
end
$$;
create trigger runs_derive_status before insert or update on runs
  for each row execute function runs_derive_status();

-- `extra` of a run merged with a later or earlier send: top-level keys of `over` win, and when both
-- carry `metadata` objects, their keys are merged the same way (a patch adds usage_metadata to the
-- metadata a post sent).
create function tracing_merge_extra(base jsonb, over jsonb) returns jsonb language sql immutable as $$
  select case
    when base is null then over
    when over is null then base
    when jsonb_typeof(base -> 'metadata') = 'object' and jsonb_typeof(over -> 'metadata') = 'object'
      then base || over || jsonb_build_object('metadata', (base -> 'metadata') || (over -> 'metadata'))
    else base || over
  end
$$;

-- One row per feedback item. runs.feedback_stats is recomputed from these rows whenever feedback
-- for a run (or the run itself) is ingested: for each key, n = number of items, avg = mean of the
-- non-null scores (null when there are none), values = {each non-null value as text (strings
-- unquoted, anything else as JSON): number of items with it}.
create table run_feedback (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  id uuid not null,
  run_id uuid not null,
  trace_id uuid,
  key text not null,
  score double precision,
  value jsonb,
  comment text,
  created_at timestamptz not null default now(),
  primary key (workspace_id, id)
);
create index run_feedback_run_idx on run_feedback (workspace_id, run_id);

-- Attachments sent as multipart `attachment.<run_id>.<name>` parts, stored as bytes.
create table run_attachments (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  run_id uuid not null,
  name text not null,
  content_type text not null,
  size_bytes integer not null,
  data bytea not null,
  created_at timestamptz not null default now(),
  primary key (workspace_id, run_id, name)
);
