-- Ingest speed (issue 11): every run inserted fired two foreign-key checks, each a `FOR KEY SHARE`
-- lock on a parent row that every concurrent batch of the workspace locks too. The one on
-- `workspaces` is redundant: the key (workspace_id, session_id) → tracing_projects (workspace_id, id)
-- already names only projects of the run's own workspace, and a project exists only in an existing
-- workspace (tracing_projects.workspace_id references workspaces). Deleting a workspace still deletes
-- its runs: the cascade goes through its projects.
alter table runs drop constraint runs_workspace_id_fkey;
