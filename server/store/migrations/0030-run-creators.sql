-- Who created each agent run and cron (issue 29): the API key that sent the request and that key's
-- user (null for a service key; both null with AGENTPLANE_AUTH=none or a custom auth user). A run's
-- trace counts in granular usage under them, whichever process executes it, and a cron's runs under
-- the cron's creator. No foreign keys: like the usage rollups, which keep a deleted key's id, these
-- are billing history and outlive the key.
alter table agent_runs add column created_by_api_key_id uuid, add column created_by_user_id uuid;
alter table agent_crons add column created_by_api_key_id uuid, add column created_by_user_id uuid;
