-- The claim of a pending run by a worker (server/store/agents/agent-run-store.ts claimRun) as one
-- function that locks the thread's queue itself, as the end of a run does (migration 0035): it was
-- a transaction of four statements (BEGIN, the queue's lock, the claim, COMMIT). The function takes
-- the lock, then claims the run in a second statement, whose fresh snapshot sees every run started or
-- created on the thread before the lock was granted: two workers can never both start runs of one
-- thread. The claim starts an attempt of the run when it heads its thread's queue (no run of the
-- thread running, no earlier pending run that may start); no row when it is not pending, not due, on
-- another thread than p_thread, or must wait.
create function agentplane_claim_run(
  p_workspace uuid, p_run uuid, p_thread uuid, p_owner text, p_lease uuid, p_lease_seconds float8
) returns setof agent_runs language plpgsql volatile as $$
begin
  perform agentplane_lock_thread_queue(p_workspace, p_thread);

  return query update agent_runs r set
    status = 'running', attempt = r.attempt + 1, lease_owner = p_owner, lease_token = p_lease,
    lease_expires_at = now() + make_interval(secs => p_lease_seconds),
    started_at = coalesce(r.started_at, now()), updated_at = now()
  where r.workspace_id = p_workspace and r.run_id = p_run and r.thread_id = p_thread
    and r.status = 'pending' and r.not_before <= now()
    and not exists (
      select 1 from agent_runs o
      where o.workspace_id = r.workspace_id and o.thread_id = r.thread_id and o.run_id <> r.run_id
        and (o.status = 'running' or (o.status = 'pending' and o.run_id < r.run_id and o.not_before <= now())))
  returning r.*;
end
$$;
