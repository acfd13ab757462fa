-- The config and context LANGGRAPH_CONFIG last gave each system assistant. When a process starts
-- with a different value, the system assistant gets a new version with the new settings once; while
-- the value stays the same, edits a user made to the assistant are left alone.

create table system_assistant_defaults (
  workspace_id uuid not null,
  assistant_id uuid not null,
  config jsonb not null,
  context jsonb not null,
  primary key (workspace_id, assistant_id),
  foreign key (workspace_id, assistant_id) references assistants (workspace_id, assistant_id) on delete cascade
);
