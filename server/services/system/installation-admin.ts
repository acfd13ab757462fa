import { Code, ConnectError } from "@connectrpc/connect";
import type { Sql } from "../../store/db.js";
import { findFirstOrganization } from "../../store/iam/organization-store.js";
import type { Principal } from "../iam/principal.js";

/**
 * Refuses with PERMISSION_DENIED, saying that `what` needs an admin key of the installation's
 * organization (the one bootstrap created), anyone but such an admin: the operations on a process
 * itself (a heap snapshot holds every tenant's data; the log level is the whole process's).
 */
export async function requireInstallationAdmin(sql: Sql, principal: Principal, what: string): Promise<void> {
  const owner = await findFirstOrganization(sql);
  if (principal.organizationRole !== "admin" || owner?.id !== principal.organization.id) {
    throw new ConnectError(
      `permission denied: ${what} needs an admin key of the installation's organization`,
      Code.PermissionDenied,
    );
  }
}
