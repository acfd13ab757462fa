-- Ingest speed (issue 11), measured with bench:ingest --statements: two changes to its writes.
--
-- 1. The usage rollups are written at commit, not mid-transaction.
--
-- Every ingest batch of a workspace adds to the same eight usage_rollups rows (its hour and day, for
-- the workspace, the project, the user and the key). Upserted in the middle of the batch's
-- transaction, those rows stayed locked until the server had read the statement's answer and sent
-- COMMIT: a round trip through a Node process that is busy parsing the other batches. Concurrent
-- batches queued on them (bench:ingest, pg_stat_statements: the upsert took 17.8 ms a call, all of it
-- waiting, against 2.5 ms for the trace rollups' statement).
--
-- Now the batch inserts its counts as one row of usage_pending, which no other transaction touches,
-- and a deferred trigger adds them to usage_rollups, in one statement, while the transaction
-- commits: the rows of usage_rollups are locked only from that moment to the end of the commit,
-- inside Postgres. The counts still commit or roll back with the traces, so a trace is counted
-- exactly once. A pending row is deleted in the transaction that inserts it, so the table is empty
-- outside transactions; unlogged, as no committed state ever holds a row of it (a crash that empties
-- it loses nothing). The counts are added in the order the recorder lists them, one fixed order (see
-- server/tracing/usage-recorder.ts), so concurrent commits queue on the same first row rather than
-- deadlock.
create unlogged table usage_pending (
  -- Only what the trigger needs to delete the row it has read.
  id bigint generated always as identity primary key,
  workspace_id uuid not null,
  -- [{ord, dimension, granularity, bucket_start, dimension_id, traces}], added by ascending ord.
  counts jsonb not null check (jsonb_typeof(counts) = 'array')
);

-- Scoped like the other tracing tables (migration 0020): a request inserts counts of its workspaces only.
alter table usage_pending enable row level security;
create policy workspace_scope on usage_pending to agentplane_tenant
  using (workspace_id = any ((select agentplane_workspace_ids())::uuid[]))
  with check (workspace_id = any ((select agentplane_workspace_ids())::uuid[]));
grant select, insert, delete on usage_pending to agentplane_tenant;

-- Runs as the committing transaction's role, so usage_rollups' own row-level security applies too.
create function usage_pending_move() returns trigger language plpgsql as $$
begin
  insert into usage_rollups as u (workspace_id, dimension, granularity, bucket_start, dimension_id, traces)
  select new.workspace_id, c.dimension, c.granularity, c.bucket_start, c.dimension_id, c.traces
  from jsonb_to_recordset(new.counts) as c (
    ord int, dimension text, granularity text, bucket_start timestamptz, dimension_id uuid, traces bigint)
  order by c.ord
  on conflict (workspace_id, dimension, granularity, bucket_start, dimension_id)
  do update set traces = u.traces + excluded.traces;
  delete from usage_pending where id = new.id;
  return null;
end
$$;

create constraint trigger usage_pending_move after insert on usage_pending
  deferrable initially deferred
  for each row execute function usage_pending_move();

-- 2. The status of a run is derived by its trigger only when the row does not already carry the
-- derived value. The ingest's insert now writes the derived status itself, and the trace rollups
-- and feedback stats leave end_time and error as they are, so their updates of a batch's roots no
-- longer call the PL/pgSQL function per row; a write that changes end_time or error without the
-- matching status (a patch merged into a stored run, any other writer) still gets it derived. In
-- bench:ingest's shape the insert took 0.90 of its time without the call (median of six pairs of
-- databases written side by side, batches interleaved; 0.77-1.07). The condition is the function's
-- own rule, written again as an expression.
drop trigger runs_derive_status on runs;
create trigger runs_derive_status before insert or update on runs
  for each row
  when (new.status is distinct from case
    when new.error is not null then 'error'
    when new.end_time is not null then 'success'
    else 'pending'
  end)
  execute function runs_derive_status();
