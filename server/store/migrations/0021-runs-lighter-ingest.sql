-- Ingest speed (issue 11): two changes to `runs`.
--
-- Every run inserted fired two foreign-key checks, each a `FOR KEY SHARE` lock on a parent row that
-- every concurrent batch of the workspace locks too. The one on `workspaces` is redundant: the key
-- (workspace_id, session_id) → tracing_projects (workspace_id, id) already names only projects of
-- the run's own workspace, and a project exists only in an existing workspace
-- (tracing_projects.workspace_id references workspaces). Deleting a workspace still deletes its
-- runs: the cascade goes through its projects.
alter table runs drop constraint runs_workspace_id_fkey;

-- Every batch updates the root runs of its traces (the rollups of migration 0017), usually right
-- after inserting them. On full pages such an update writes the new row version elsewhere and adds
-- an entry for it to every index of `runs` (five, one of them GIN); with a tenth of each page kept
-- free, the root's new version fits beside the old one and the update touches no index (a HOT
-- update). Measured on bench:ingest's shape: no HOT update of 1,840 at the default 100, 1,900 of
-- 1,910 at 90, for a table 9 % larger. Later patches that add a run's outputs benefit alike. Only
-- pages written from now on keep the room: no rewrite of the table.
alter table runs set (fillfactor = 90);
