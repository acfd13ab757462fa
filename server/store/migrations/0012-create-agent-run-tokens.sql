-- Credentials of a running agent run: the in-server loopback client (`new Client()` with no URL,
-- inside a graph node) calls the API with a token minted for the run's attempt. Only the token's
-- SHA-256 is stored; it acts in the run's workspace only, and only while the run is pending or
-- running and before it expires (the run's timeout). The attempt deletes it when it ends; expired
-- rows are deleted when the next token is minted.
create table agent_run_tokens (
  token_hash bytea primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  run_id uuid not null,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);

create index agent_run_tokens_expires_idx on agent_run_tokens (expires_at);
