-- Presigned feedback tokens (the langsmith SDK's createPresignedFeedbackToken, and the Agent Server's
-- feedback_keys): a token lets whoever holds its URL leave feedback with one key on one run, without
-- an API key, until it expires. The token id is random (UUIDv4, 122 bits), never derived from
-- anything a caller knows.
--
-- Not under the tracing tables' row-level security (0020): a token is redeemed before any workspace
-- is known (the token names it), so the lookup by id spans workspaces. Every other query names its
-- workspace in SQL, and the feedback a token creates is written inside a workspace scope as any is.
create table feedback_tokens (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  run_id uuid not null,
  feedback_key text not null,
  -- The feedback config the token was made with ({type, min, max, categories}); null for none.
  feedback_config jsonb,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);

-- A run's tokens, oldest first (listPresignedFeedbackTokens), and the sweep of expired ones.
create index feedback_tokens_run_idx on feedback_tokens (workspace_id, run_id, created_at, id);
create index feedback_tokens_expiry_idx on feedback_tokens (expires_at);
