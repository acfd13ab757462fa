-- Row-level security on the tracing tables, as defence in depth beneath the workspace condition every
-- query already has (server/store/tracing/workspace-scope.ts). A request that touches them does so in a
-- transaction that switches to the role agentplane_tenant and names the workspaces it may see in the
-- setting agentplane.workspace_ids; under that role a row of any other workspace is neither read nor
-- written, whatever the SQL says, and without the setting nothing is visible at all.
--
-- The role that owns the tables (the one agentplane connects as) is not subject to the policies, and
-- neither is a superuser: migrations, background jobs that span workspaces and the cascades of a
-- workspace purge keep working unchanged.

-- Roles belong to the cluster, not the database: every agentplane database of a cluster shares this
-- one (it holds no privilege outside the grants below). Creating it needs a superuser or CREATEROLE;
-- where agentplane's user has neither, an administrator runs the two statements the error names.
do $$
declare
  can_set boolean;
begin
  begin
    if not exists (select 1 from pg_roles where rolname = 'agentplane_tenant') then
      create role agentplane_tenant nologin;
    end if;
  exception
    when duplicate_object or unique_violation then null; -- created by a concurrent migration
  end;
  -- Switching to a role needs membership with the SET option (Postgres 16 and later; mere
  -- membership before). A superuser may switch to any role.
  can_set := case
    when current_setting('server_version_num')::int >= 160000
      then pg_has_role(current_user, 'agentplane_tenant', 'SET')
    else pg_has_role(current_user, 'agentplane_tenant', 'MEMBER')
  end;
  if not can_set then
    execute format('grant agentplane_tenant to %I', current_user);
  end if;
exception
  when insufficient_privilege then
    raise exception using
      message = format('agentplane needs the role agentplane_tenant, which %I may switch to', current_user),
      hint = format('as a superuser, run: create role agentplane_tenant nologin; grant agentplane_tenant to %I;', current_user);
end
$$;

-- What requests do with the tracing tables, and the columns of other tables the usage query labels
-- its rows with. Nothing else: the role cannot see API keys' hashes, threads or anything outside.
grant select, insert, update, delete on tracing_projects, runs, run_feedback, run_attachments, usage_rollups
  to agentplane_tenant;
grant select (id, display_name) on workspaces to agentplane_tenant;
grant select (id, email) on users to agentplane_tenant;
grant select (id, short_key, organization_id) on api_keys to agentplane_tenant;

-- The workspaces the current transaction may see: `agentplane.workspace_ids` as a uuid[] literal
-- (`{...}`); none when it is unset or empty.
create function agentplane_workspace_ids() returns uuid[] language sql stable parallel safe as $$
  select coalesce(nullif(current_setting('agentplane.workspace_ids', true), ''), '{}')::uuid[]
$$;

-- Each tracing table: row-level security on, and one policy for agentplane_tenant. `(select ...)`
-- makes the set an InitPlan: computed once per statement and usable as an index condition, instead
-- of once per row.
do $$
declare
  tracing_table text;
begin
  foreach tracing_table in array array['tracing_projects', 'runs', 'run_feedback', 'run_attachments', 'usage_rollups'] loop
    execute format('alter table %I enable row level security', tracing_table);
    execute format(
      'create policy workspace_scope on %I to agentplane_tenant
         using (workspace_id = any ((select agentplane_workspace_ids())::uuid[]))
         with check (workspace_id = any ((select agentplane_workspace_ids())::uuid[]))',
      tracing_table);
  end loop;
end
$$;
