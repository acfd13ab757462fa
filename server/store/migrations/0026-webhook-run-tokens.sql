-- Relative ("/…") webhooks are delivered to this server's own routes with the run's credentials:
-- a run token minted for the call. The run has ended by then (and a stateless run may already be
-- deleted with its thread), so such a token cannot depend on the run being active the way an
-- attempt's token does: `purpose` tells them apart. A webhook token acts in the run's workspace
-- only, expires after the call's timeout, and is deleted when the call ends.
alter table agent_run_tokens
  add column purpose text not null default 'attempt' check (purpose in ('attempt', 'webhook'));
