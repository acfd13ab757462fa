-- Each process keeps the API keys it resolved for a few seconds (server/services/iam/identity-cache.ts),
-- so a request does not pay a lookup. Every change to what authentication reads — the key, its
-- organization, its user and their memberships, its workspaces — is announced on the
-- agentplane_identity_changed channel, whatever code or person made it, and every process then drops
-- what it kept. NOTIFY is delivered at commit, and not at all for a rolled-back change.

create function agentplane_notify_identity_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('agentplane_identity_changed', '');
  return null;
end
$$;

-- Not on insert (a new key was never cached) and not on last_used_at alone, which authentication
-- itself writes once a minute per key and which decides nothing.
create trigger api_keys_identity_changed
  after update of id, organization_id, kind, user_id, key_hash, role, organization_role, all_workspaces,
    default_workspace_id, expires_at, revoked_at or delete or truncate
  on api_keys for each statement execute function agentplane_notify_identity_changed();

create trigger api_key_workspaces_identity_changed after insert or update or delete or truncate
  on api_key_workspaces for each statement execute function agentplane_notify_identity_changed();

create trigger organizations_identity_changed after insert or update or delete or truncate
  on organizations for each statement execute function agentplane_notify_identity_changed();

create trigger users_identity_changed after insert or update or delete or truncate
  on users for each statement execute function agentplane_notify_identity_changed();

create trigger organization_members_identity_changed after insert or update or delete or truncate
  on organization_members for each statement execute function agentplane_notify_identity_changed();

create trigger workspaces_identity_changed after insert or update or delete or truncate
  on workspaces for each statement execute function agentplane_notify_identity_changed();

create trigger workspace_members_identity_changed after insert or update or delete or truncate
  on workspace_members for each statement execute function agentplane_notify_identity_changed();
