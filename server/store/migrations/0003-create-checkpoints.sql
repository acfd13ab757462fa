-- LangGraph checkpoints of Agent Server threads, written by server/runtime/postgres-checkpointer.ts.
--
-- Layout: a checkpoint row holds the serialized checkpoint WITHOUT its channel values; each channel
-- value is stored once per (channel, version) in checkpoint_blobs and shared by every checkpoint
-- whose channel_versions name that version. A step that changes one channel of a large state so
-- writes one blob, not the whole state again. checkpoint_writes holds the pending writes of tasks.
--
-- Identifiers are TEXT with the "C" collation: LangGraph compares checkpoint ids (uuid6) bytewise to
-- find the newest and to apply `before`, and "C" makes `order by` and `<` agree with that.

create table checkpoints (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  thread_id text collate "C" not null,
  checkpoint_ns text collate "C" not null default '',
  checkpoint_id text collate "C" not null,
  parent_checkpoint_id text collate "C",
  -- Serializer type tag ("json", "bytes") of `checkpoint`.
  type text not null,
  checkpoint bytea not null,
  -- A copy of the checkpoint's channel_versions, so SQL can tell which blobs a checkpoint needs
  -- (loading, copying and pruning) without deserializing `checkpoint`.
  channel_versions jsonb not null default '{}',
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now(),
  -- Serves "latest checkpoint of a thread and namespace" and "history newest first" (backward scan).
  primary key (workspace_id, thread_id, checkpoint_ns, checkpoint_id)
);

create table checkpoint_blobs (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  thread_id text collate "C" not null,
  checkpoint_ns text collate "C" not null default '',
  channel text collate "C" not null,
  version text collate "C" not null,
  -- "empty" marks a channel that had a new version but no value (it was cleared).
  type text not null,
  blob bytea,
  primary key (workspace_id, thread_id, checkpoint_ns, channel, version)
);

create table checkpoint_writes (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  thread_id text collate "C" not null,
  checkpoint_ns text collate "C" not null default '',
  checkpoint_id text collate "C" not null,
  task_id text collate "C" not null,
  -- Position of the write within its task's batch; special channels (errors, interrupts, resume
  -- values, scheduled) use negative positions (WRITES_IDX_MAP) so a newer one replaces the older.
  idx integer not null,
  channel text not null,
  type text not null,
  value bytea,
  primary key (workspace_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
