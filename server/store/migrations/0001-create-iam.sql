-- Organizations, workspaces, users, memberships and API keys: the tenancy every other table hangs off.

create table organizations (
  id uuid primary key,
  display_name text not null,
  plan text not null check (plan in ('developer', 'plus', 'enterprise')),
  created_at timestamptz not null default now()
);

create table workspaces (
  id uuid primary key,
  organization_id uuid not null references organizations (id) on delete cascade,
  display_name text not null,
  tenant_handle text not null,
  is_personal boolean not null default false,
  created_at timestamptz not null default now(),
  -- Set when a delete is requested; the workspace.purge job removes the row and, through foreign
  -- keys, everything the workspace holds. Reads ignore rows with deleted_at set.
  deleted_at timestamptz
);
create unique index workspaces_handle_key on workspaces (organization_id, tenant_handle) where deleted_at is null;
create index workspaces_organization_idx on workspaces (organization_id, created_at);

create table users (
  id uuid primary key,
  email text not null,
  full_name text not null default '',
  created_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));

create table organization_members (
  organization_id uuid not null references organizations (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  role text not null check (role in ('admin', 'operator', 'user', 'viewer')),
  created_at timestamptz not null default now(),
  primary key (organization_id, user_id)
);
create index organization_members_user_idx on organization_members (user_id);

create table workspace_members (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  role text not null check (role in ('admin', 'editor', 'viewer')),
  created_at timestamptz not null default now(),
  primary key (workspace_id, user_id)
);
create index workspace_members_user_idx on workspace_members (user_id);

create table api_keys (
  id uuid primary key,
  organization_id uuid not null references organizations (id) on delete cascade,
  kind text not null check (kind in ('personal', 'service')),
  -- The user a personal key acts as; null for service keys.
  user_id uuid references users (id) on delete cascade,
  -- SHA-256 of the full key; the key itself is never stored.
  key_hash bytea not null unique,
  short_key text not null,
  description text not null default '',
  -- Service keys act with these roles; personal keys use their user's memberships.
  role text check (role in ('admin', 'editor', 'viewer')),
  organization_role text check (organization_role in ('admin', 'operator', 'user', 'viewer')),
  -- Service keys: true when the key may act in every workspace of the organization, false when it
  -- is limited to the rows of api_key_workspaces (an explicit flag, so that deleting the last scoped
  -- workspace never widens the key).
  all_workspaces boolean not null default false,
  default_workspace_id uuid references workspaces (id) on delete set null,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  check ((kind = 'personal') = (user_id is not null)),
  check (kind = 'personal' or (role is not null and organization_role is not null))
);
create index api_keys_organization_idx on api_keys (organization_id, created_at desc);

create table api_key_workspaces (
  api_key_id uuid not null references api_keys (id) on delete cascade,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  primary key (api_key_id, workspace_id)
);
create index api_key_workspaces_workspace_idx on api_key_workspaces (workspace_id);
