-- Assistants of the Agent Server and their versions. An assistant row holds the current version's
-- fields; every version (including the current one) is kept in assistant_versions. Ids are unique
-- per workspace, not globally: a graph's system assistant has the same uuid5 id in every workspace.

create table assistants (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  assistant_id uuid not null,
  graph_id text not null,
  name text not null,
  description text,
  config jsonb not null default '{}',
  context jsonb not null default '{}',
  metadata jsonb not null default '{}',
  -- The current version; the latest one unless SetLatestAssistantVersion chose an older one.
  version integer not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (workspace_id, assistant_id)
);

-- Containment filter (`metadata @> $1`) of search and count.
create index assistants_metadata_idx on assistants using gin (metadata jsonb_path_ops);
-- The sort orders search offers, each within a workspace.
create index assistants_created_at_idx on assistants (workspace_id, created_at);
create index assistants_updated_at_idx on assistants (workspace_id, updated_at);
create index assistants_graph_id_idx on assistants (workspace_id, graph_id);

create table assistant_versions (
  workspace_id uuid not null,
  assistant_id uuid not null,
  version integer not null check (version >= 1),
  graph_id text not null,
  name text not null,
  description text,
  config jsonb not null default '{}',
  context jsonb not null default '{}',
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now(),
  primary key (workspace_id, assistant_id, version),
  foreign key (workspace_id, assistant_id) references assistants (workspace_id, assistant_id) on delete cascade
);
