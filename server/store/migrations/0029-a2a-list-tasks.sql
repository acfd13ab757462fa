-- A2A 1.0 ListTasks pages an assistant's tasks newest first: its runs by (workspace, assistant) in
-- run id order (UUIDv7, time ordered), without reading the workspace's other runs.
create index agent_runs_assistant_idx on agent_runs (workspace_id, assistant_id, run_id desc);
