-- The end of a run sent together with its COMMIT (server/store/agents/run-end-store.ts) cannot stop before
-- COMMIT when it finds more to do in its transaction (the thread's next run to dispatch, a thread
-- deleted while the run ran): it fails through this function instead, which rolls the whole
-- transaction back, and the worker ends the run again with the follow-up in the same transaction.
-- A custom SQLSTATE of its own, so the worker tells this failure from any other.
create function agentplane_run_end_needs_more() returns boolean language plpgsql as $$
begin
  raise exception 'the end of this run has more to do in its transaction' using errcode = 'AP001';
end
$$;
