-- The end of a run (migration 0035) announces what it wrote with its end: the NOTIFY of the end
-- event carries, after "<run> <thread> end <seq>", the run's new status, attempt, cancel fields,
-- updated_at and output as one JSON object, so that a process waiting on the run elsewhere (an
-- `api` process answering /runs/wait for a run its worker ended) answers from the record it created
-- and this, without reading the run again (server/runtime/run-event-bus.ts). Only when it fits:
-- Postgres refuses NOTIFY payloads of 8,000 bytes or more, so an output past 7,000 bytes of JSON
-- is left out, as it is when the run's thread is gone (the run is then deleted with the end, and
-- the waiter must read that). Everything else is as in 0035.
create or replace function agentplane_end_run(
  p_workspace uuid, p_run uuid, p_thread uuid, p_lease uuid, p_status text, p_output jsonb,
  p_ttl_seconds float8, p_ms bigint[], p_events text[], p_data text[], p_channel text,
  p_temporary boolean, p_has_state boolean, p_values jsonb, p_interrupts jsonb,
  p_thread_status text, p_error jsonb, p_alone boolean
) returns table (
  started_at timestamptz, ended_at timestamptz, updated_at timestamptz, seqs text[], saved boolean,
  deleted boolean, next_run_id uuid, next_not_before timestamptz, notices bigint, needs_more boolean
) language plpgsql volatile as $$
#variable_conflict use_column
begin
  perform agentplane_lock_thread_queue(p_workspace, p_thread);

  return query with finished as (
    update agent_runs set status = p_status, output = p_output, ended_at = now(),
      updated_at = now(), lease_owner = null, lease_token = null, lease_expires_at = null
    where run_id = p_run and lease_token = p_lease and status = 'running'
    returning started_at, ended_at, updated_at, attempt, cancel_action, cancel_reason
  ), expired as (
    update agent_run_events set expires_at = now() + make_interval(secs => p_ttl_seconds)
    where run_id = p_run and exists (select 1 from finished)
  ), added as (
    insert into agent_run_events (workspace_id, run_id, thread_id, ms, event, data, expires_at)
    select p_workspace, p_run, p_thread, e.ms, e.event, e.data, now() + make_interval(secs => p_ttl_seconds)
    from unnest(p_ms, p_events, p_data) with ordinality as e(ms, event, data, n)
    where exists (select 1 from finished)
    order by e.n
    returning seq
  ), others as (
    select exists (
      select 1 from agent_runs o
      where o.workspace_id = p_workspace and o.thread_id = p_thread and o.run_id <> p_run
        and o.status in ('pending', 'running')) as active
  ), saved as (
    update threads t set
      "values" = case when p_has_state then p_values else t."values" end,
      interrupts = case when p_has_state then p_interrupts else t.interrupts end,
      state_updated_at = case when p_has_state then now() else t.state_updated_at end,
      status = case when (select active from others) then 'busy' else p_thread_status end,
      error = p_error,
      updated_at = now(),
      expires_at = case when ttl_minutes is null then null
        else now() + make_interval(secs => ttl_minutes * 60) end
    where t.workspace_id = p_workspace and t.thread_id = p_thread and exists (select 1 from finished)
      and (not p_temporary or (select active from others))
    returning 1
  ), deleted as (
    delete from threads t
    where p_temporary and t.workspace_id = p_workspace and t.thread_id = p_thread
      and exists (select 1 from finished) and not (select active from others)
    returning 1
  ), deleted_blobs as (
    delete from checkpoint_blobs
    where workspace_id = p_workspace and thread_id = p_thread::text and exists (select 1 from deleted)
  ), deleted_writes as (
    delete from checkpoint_writes
    where workspace_id = p_workspace and thread_id = p_thread::text and exists (select 1 from deleted)
  ), deleted_checkpoints as (
    delete from checkpoints
    where workspace_id = p_workspace and thread_id = p_thread::text and exists (select 1 from deleted)
  ), summary as (
    select jsonb_build_object('status', p_status, 'attempt', f.attempt, 'cancel_action', f.cancel_action,
      'cancel_reason', f.cancel_reason, 'updated_at', f.updated_at, 'output', p_output)::text as payload
    from finished f
    where exists (select 1 from saved) or exists (select 1 from deleted)
  ), notified as (
    select pg_notify(p_channel, p_run::text || ' ' || p_thread::text || ' end ' || max(seq)::text
      || coalesce((select ' ' || s.payload from summary s where octet_length(s.payload) <= 7000), ''))
    from added
    having count(*) > 0
  ), next as (
    select run_id, not_before from agent_runs
    where workspace_id = p_workspace and thread_id = p_thread and status = 'pending'
      and exists (select 1 from finished)
      and not exists (
        select 1 from agent_runs o
        where o.workspace_id = p_workspace and o.thread_id = p_thread and o.run_id <> p_run
          and o.status = 'running')
    order by (not_before > now()), run_id
    limit 1
  )
  select f.started_at, f.ended_at, f.updated_at,
    array(select seq::text from added order by seq),
    exists (select 1 from saved),
    exists (select 1 from deleted),
    (select run_id from next), (select not_before from next),
    (select count(*) from notified),
    case when p_alone
           and (exists (select 1 from next) or not (exists (select 1 from saved) or exists (select 1 from deleted)))
         then agentplane_run_end_needs_more() end
  from finished f;
end
$$;
