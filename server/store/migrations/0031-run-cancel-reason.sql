-- Why a run was cancelled (the Agent Server's Run.cancel_reason): set by the cancel that stopped it
-- (`cancelled`, `taken:<time>`, `multitask:interrupt`, `multitask:rollback`); null for a run that was
-- not cancelled.
alter table agent_runs add column cancel_reason text;
