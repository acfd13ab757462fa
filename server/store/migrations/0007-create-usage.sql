-- Granular usage: trace counts rolled up per workspace, project, user and API key, by UTC hour and
-- by UTC day. A trace is counted once, when its root run is first received (server/tracing/
-- usage-recorder.ts), so a usage query reads buckets, never traces: a one-year query reads at most
-- 366 daily rows (plus up to 46 edge hourly rows) per dimension value, whatever the trace volume.

create table usage_rollups (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  -- Which dimension the row counts by; dimension_id is the workspace, project, user or API key id.
  dimension text not null check (dimension in ('workspace', 'project', 'user', 'api_key')),
  -- 'hour' rows start on a UTC hour, 'day' rows on UTC midnight.
  granularity text not null check (granularity in ('hour', 'day')),
  bucket_start timestamptz not null,
  -- No foreign key: usage is billing history and outlives deleted projects, users and keys. A trace
  -- without a user (service key) or without a key counts under the nil UUID.
  dimension_id uuid not null,
  traces bigint not null check (traces > 0),
  -- traces is carried in the key's index so a usage query is an index-only range scan: the rows of
  -- one dimension over a year sit on a few index pages, while their heap tuples are scattered.
  primary key (workspace_id, dimension, granularity, bucket_start, dimension_id) include (traces)
);
