/**
 * Tokens minted for agent run attempts (the loopback client's credentials) and for relative
 * webhook calls: stored as hashes, valid in the run's workspace until they expire; an attempt's
 * token only while its run is active.
 */
import type { RunCreator } from "../agents/agent-run-store.js";
import type { Queryable } from "../db.js";
import type { OrganizationRecord } from "../iam/organization-store.js";

/** What a valid run token acts as: the run's workspace, in its organization. */
export interface RunTokenScope {
  runId: string;
  /** Who created the run (both null once the run is gone, for a webhook's token). */
  runCreator: RunCreator;
  workspace: { id: string; displayName: string; tenantHandle: string; isPersonal: boolean; createdAt: Date };
  organization: OrganizationRecord;
}

/** What a run token is for: a run attempt's loopback client, or one relative webhook call. */
export type RunTokenPurpose = "attempt" | "webhook";

/** Stores a token's hash for a run, and deletes the tokens that expired. */
export async function insertRunToken(
  q: Queryable,
  token: {
    tokenHash: Buffer;
    workspaceId: string;
    runId: string;
    ttlSeconds: number;
    purpose: RunTokenPurpose;
  },
): Promise<void> {
  await q`delete from agent_run_tokens where expires_at < now()`;
  await q`
    insert into agent_run_tokens (token_hash, workspace_id, run_id, expires_at, purpose)
    values (${token.tokenHash}, ${token.workspaceId}, ${token.runId},
            now() + make_interval(secs => ${token.ttlSeconds}), ${token.purpose})`;
}

/** Deletes a token (its attempt ended). */
export async function deleteRunToken(q: Queryable, tokenHash: Buffer): Promise<void> {
  await q`delete from agent_run_tokens where token_hash = ${tokenHash}`;
}

/**
 * The scope of a token that is valid now: not expired, its workspace live, and for an attempt's
 * token its run pending or running (a webhook's is for a run that ended). Undefined otherwise.
 */
export async function findRunTokenScope(q: Queryable, tokenHash: Buffer): Promise<RunTokenScope | undefined> {
  const [row] = await q<
    {
      run_id: string;
      workspace_id: string;
      display_name: string;
      tenant_handle: string;
      is_personal: boolean;
      workspace_created_at: Date;
      organization_id: string;
      organization_name: string;
      plan: OrganizationRecord["plan"];
      organization_created_at: Date;
      created_by_api_key_id: string | null;
      created_by_user_id: string | null;
    }[]
  >`
    select t.run_id, r.created_by_api_key_id, r.created_by_user_id, w.id as workspace_id, w.display_name, w.tenant_handle, w.is_personal,
           w.created_at as workspace_created_at, o.id as organization_id,
           o.display_name as organization_name, o.plan, o.created_at as organization_created_at
    from agent_run_tokens t
    left join agent_runs r on r.workspace_id = t.workspace_id and r.run_id = t.run_id
    join workspaces w on w.id = t.workspace_id
    join organizations o on o.id = w.organization_id
    where t.token_hash = ${tokenHash} and t.expires_at > now()
      and (t.purpose = 'webhook' or r.status in ('pending', 'running')) and w.deleted_at is null`;
  if (!row) return undefined;
  return {
    runId: row.run_id,
    runCreator: { apiKeyId: row.created_by_api_key_id, userId: row.created_by_user_id },
    workspace: {
      id: row.workspace_id,
      displayName: row.display_name,
      tenantHandle: row.tenant_handle,
      isPersonal: row.is_personal,
      createdAt: row.workspace_created_at,
    },
    organization: {
      id: row.organization_id,
      displayName: row.organization_name,
      plan: row.plan,
      createdAt: row.organization_created_at,
    },
  };
}
