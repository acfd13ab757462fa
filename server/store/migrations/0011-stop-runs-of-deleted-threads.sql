-- Deleting a thread or an assistant stops its runs, whatever code deletes it (the API, a TTL sweep,
-- a prune, a workspace purge). A deleted thread takes its runs with it: pending ones go at once;
-- running ones are told to stop on the agentplane_run_control channel (delivered at commit), and
-- their worker then deletes them with what they wrote after the thread went. Ended runs of a stateless
-- run's temporary thread stay until the run sweep (their output answers wait and join). A deleted assistant's
-- pending runs end interrupted and its running ones are told to stop. The workers' heartbeats check
-- the same thing, so a lost notification delays the stop by one heartbeat, never forever.

create function agentplane_stop_runs_of_deleted_thread() returns trigger language plpgsql as $$
begin
  delete from agent_runs
  where workspace_id = old.workspace_id and thread_id = old.thread_id
    and (status = 'pending' or (status <> 'running' and not temporary));
  perform pg_notify('agentplane_run_control', run_id::text || ' orphaned') from agent_runs
  where workspace_id = old.workspace_id and thread_id = old.thread_id and status = 'running';
  return null;
end
$$;

create trigger threads_stop_runs after delete on threads
  for each row execute function agentplane_stop_runs_of_deleted_thread();

create function agentplane_stop_runs_of_deleted_assistant() returns trigger language plpgsql as $$
begin
  update agent_runs set status = 'interrupted', ended_at = now(), updated_at = now()
  where workspace_id = old.workspace_id and assistant_id = old.assistant_id and status = 'pending';
  perform pg_notify('agentplane_run_control', run_id::text || ' orphaned') from agent_runs
  where workspace_id = old.workspace_id and assistant_id = old.assistant_id and status = 'running';
  return null;
end
$$;

create trigger assistants_stop_runs after delete on assistants
  for each row execute function agentplane_stop_runs_of_deleted_assistant();
