import type { PlanTier } from "../../config.js";
import type { Queryable } from "../db.js";

/** An organization row. */
export interface OrganizationRecord {
  id: string;
  displayName: string;
  plan: PlanTier;
  createdAt: Date;
}

interface OrganizationRow {
  id: string;
  display_name: string;
  plan: PlanTier;
  created_at: Date;
}

function toRecord(row: OrganizationRow): OrganizationRecord {
  return { id: row.id, displayName: row.display_name, plan: row.plan, createdAt: row.created_at };
}

/** Inserts an organization. */
export async function insertOrganization(
  q: Queryable,
  org: { id: string; displayName: string; plan: PlanTier },
): Promise<OrganizationRecord> {
  const [row] = await q<OrganizationRow[]>`
    insert into organizations (id, display_name, plan)
    values (${org.id}, ${org.displayName}, ${org.plan})
    returning id, display_name, plan, created_at`;
  return toRecord(row!);
}

/** The oldest organization: the one bootstrap creates and AGENTPLANE_AUTH=none acts in. */
export async function findFirstOrganization(q: Queryable): Promise<OrganizationRecord | undefined> {
  const [row] = await q<OrganizationRow[]>`
    select id, display_name, plan, created_at from organizations order by created_at, id limit 1`;
  return row && toRecord(row);
}

/**
 * Locks an organization's row until the transaction ends, serialising changes that check an
 * organization-wide invariant (such as "at least one workspace remains").
 */
export async function lockOrganization(q: Queryable, id: string): Promise<void> {
  await q`select id from organizations where id = ${id} for update`;
}
