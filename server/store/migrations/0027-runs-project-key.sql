-- Ingest speed (issue 11): the runs' foreign key to their project is replaced by a lock the ingest
-- takes once per project and batch, and by a trigger that deletes a deleted project's runs.
--
-- The key (workspace_id, session_id) → tracing_projects checked every row written: an after-row
-- trigger queued per run, and at the end of the statement one SPI query per run that locked the
-- same project row again (FOR KEY SHARE). It fired on the rollups' update of a batch's roots too,
-- as those rows were inserted by the same transaction. Measured with perf on bench:ingest's insert
-- of 100 runs: 11 % of the backend's CPU was RI_FKey_check, more than the heap insert itself.
--
-- What the key guaranteed is kept, by other means:
-- - A run names a project of its own workspace that exists: the only writer of runs.session_id is
--   trace ingest (server/store/tracing/run-store.ts), and it resolves every project of a batch, scoped to the
--   workspace, in the batch's transaction before it writes a run, locking each project row FOR KEY
--   SHARE (server/store/tracing/project-store.ts), the lock the key's check took. A project deleted before
--   that is not found (a 404, or created again when named); a delete that comes after waits for the
--   batch to commit and then deletes its runs too, as the cascade did.
-- - Deleting a project (or, through its cascade, a workspace) deletes its runs: the trigger below,
--   in the same statement's transaction, as `on delete cascade` did.
alter table runs drop constraint runs_workspace_id_session_id_fkey;

-- A statement deleting many projects (a workspace purge) deletes their runs in one statement. It
-- runs as the deleting role: under row-level security, a tenant deletes runs of its own workspace,
-- the only ones its projects have.
create function tracing_projects_delete_runs() returns trigger language plpgsql as $$
begin
  delete from runs using deleted_projects as p
  where runs.workspace_id = p.workspace_id and runs.session_id = p.id;
  return null;
end
$$;

create trigger tracing_projects_delete_runs after delete on tracing_projects
  referencing old table as deleted_projects
  for each statement execute function tracing_projects_delete_runs();
