-- The start of a run on a quiet thread (server/store/agents/thread-run-start-store.ts) as one
-- function: a run on an existing thread was a transaction of two round trips (BEGIN with the
-- assistant's read, the queue's lock and the thread's reads; then the insert and COMMIT). When the
-- thread is quiet (it exists, has no config of its own and no pending or running run) and the
-- creating process has a slot for the run, nothing the caller decides depends on what it would
-- read: the function checks that the assistant's row is still at the version the run was made
-- from, takes the queue's lock, then, in a second statement whose fresh snapshot sees
-- every run created on the thread before the lock was granted (as the end and the claim of a run
-- do, migrations 0035 and 0036), checks that the thread is quiet and inserts the run, running under the slot's lease as its
-- first attempt, with the thread marked busy (p_thread_metadata merged into its metadata when
-- given). No row, and nothing written, when the thread is not quiet: the caller then creates the run
-- the long way, which applies the multitask strategy, the thread's config and the rest. An assistant
-- no longer at p_assistant_version fails with SQLSTATE AP002, so that the caller forgets the record
-- it kept of it.
create function agentplane_start_thread_run(
  p_workspace uuid, p_thread uuid, p_run uuid, p_assistant uuid, p_assistant_version xid,
  p_graph text, p_metadata jsonb, p_kwargs jsonb, p_multitask text, p_owner text, p_lease uuid,
  p_lease_seconds float8, p_encryption_context text, p_api_key uuid, p_user uuid,
  p_thread_metadata jsonb
) returns setof agent_runs language plpgsql volatile as $$
begin
  if p_assistant_version is not null and not exists (
    select 1 from assistants a
    where a.workspace_id = p_workspace and a.assistant_id = p_assistant and a.xmin = p_assistant_version
  ) then
    raise exception 'assistant % changed since the run was made from it', p_assistant using errcode = 'AP002';
  end if;
  perform agentplane_lock_thread_queue(p_workspace, p_thread);

  return query with quiet as (
    select t.workspace_id, t.thread_id from threads t
    where t.workspace_id = p_workspace and t.thread_id = p_thread and t.config = '{}'::jsonb
      and not exists (
        select 1 from agent_runs o
        where o.workspace_id = p_workspace and o.thread_id = p_thread and o.status in ('pending', 'running'))
  ), inserted as (
    insert into agent_runs (workspace_id, run_id, thread_id, assistant_id, graph_id, metadata, kwargs,
                            multitask_strategy, temporary, not_before, status, attempt, lease_owner,
                            lease_token, lease_expires_at, started_at, encryption_context,
                            created_by_api_key_id, created_by_user_id)
    select quiet.workspace_id, p_run, quiet.thread_id, p_assistant, p_graph, p_metadata, p_kwargs,
           p_multitask, false, now(), 'running', 1, p_owner, p_lease,
           now() + make_interval(secs => p_lease_seconds), now(), p_encryption_context, p_api_key, p_user
    from quiet
    returning *
  ), busy as (
    update threads t set status = 'busy', updated_at = now(),
      metadata = case when p_thread_metadata is null then t.metadata else t.metadata || p_thread_metadata end
    where t.workspace_id = p_workspace and t.thread_id = p_thread and exists (select 1 from inserted)
  )
  select * from inserted;
end
$$;
