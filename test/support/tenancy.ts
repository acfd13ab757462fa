import { uuidv7 } from "../../server/ids.js";
import type { Queryable } from "../../server/store/db.js";
import { insertOrganization } from "../../server/store/iam/organization-store.js";
import { insertWorkspace } from "../../server/store/iam/workspace-store.js";

/**
 * Inserts an organization with one workspace, for tests that work below the API (stores, savers,
 * jobs) and only need a workspace row for their foreign keys. Returns the workspace id.
 */
export async function createTestWorkspace(q: Queryable): Promise<string> {
  const organizationId = uuidv7();
  const workspaceId = uuidv7();
  await insertOrganization(q, { id: organizationId, displayName: "org", plan: "enterprise" });
  await insertWorkspace(q, {
    id: workspaceId,
    organizationId,
    displayName: "ws",
    tenantHandle: "ws",
    isPersonal: false,
  });
  return workspaceId;
}

/** The tables under row-level security (migration 0020), which a workspace scope confines. */
export const ROW_LEVEL_SECURITY_TABLES = [
  "tracing_projects",
  "runs",
  "run_feedback",
  "run_attachments",
  "usage_rollups",
] as const;
