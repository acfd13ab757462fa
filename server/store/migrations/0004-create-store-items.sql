-- The Agent Server's key-value store (BaseStore items), written by server/store/agents/store-item-store.ts.
--
-- Namespace labels never contain "." (the API and server/runtime/postgres-store.ts refuse them), so
-- the labels joined by "." plus a trailing "." (`users.u1.`) identify a namespace, and a namespace
-- prefix is a text prefix of that path: ["users"] covers every path in ['users.', 'users/') in the
-- "C" collation ("/" follows "." in ASCII). That range is what the prefix index serves.

-- Immutable (array_to_string is only stable in general, but on text[] it does not depend on any
-- setting), so a generated column can use it.
create function store_namespace_path(namespace text[]) returns text
  language sql immutable strict parallel safe
  as $$ select array_to_string(namespace, '.') || '.' $$;

create table store_items (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  namespace text[] not null,
  key text not null,
  namespace_path text collate "C" not null generated always as (store_namespace_path(namespace)) stored,
  value jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- The item's TTL in minutes, kept to restart the clock on reads; null: the item never expires.
  ttl_minutes double precision,
  -- Reads ignore items past this instant; the store.ttl-sweep job deletes them.
  expires_at timestamptz,
  primary key (workspace_id, namespace, key),
  check (cardinality(namespace) >= 1),
  check (jsonb_typeof(value) = 'object'),
  check ((ttl_minutes is null) = (expires_at is null) and (ttl_minutes is null or ttl_minutes > 0))
);

-- Prefix search and namespace listing: a range scan on the path within a workspace.
create index store_items_namespace_path_idx on store_items (workspace_id, namespace_path);
-- The TTL sweeper's scan, oldest expiry first; items without a TTL are not in it.
create index store_items_expires_at_idx on store_items (expires_at) where expires_at is not null;
