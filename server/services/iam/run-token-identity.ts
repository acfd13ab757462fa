import { Code, ConnectError } from "@connectrpc/connect";
import type { Sql } from "../../store/db.js";
import type { WorkspaceRole } from "../../store/iam/member-store.js";
import { findRunTokenScope } from "../../store/tracing/run-token-store.js";
import type { Identity } from "./identity.js";

/**
 * The role a run token acts with in its run's workspace: editors are the least role that creates
 * runs, so the token never does more than whoever created the run could.
 */
const RUN_TOKEN_ROLE: WorkspaceRole = "editor";

/**
 * Who a run token (the loopback client's credential) is: no user and no key, the run's workspace
 * only, as an editor, with no organization rights beyond reading it. 401 when the token is unknown,
 * expired, or its run has ended.
 */
export async function runTokenIdentity(sql: Sql, tokenHash: Buffer): Promise<Identity> {
  const scope = await findRunTokenScope(sql, tokenHash);
  if (!scope)
    throw new ConnectError(
      "invalid run token: it is unknown or expired, or its run has ended",
      Code.Unauthenticated,
    );
  const workspace = { ...scope.workspace, organizationId: scope.organization.id, role: RUN_TOKEN_ROLE };
  return {
    organization: scope.organization,
    user: null,
    apiKey: null,
    organizationRole: "viewer",
    grant: {
      kind: "run",
      organizationId: scope.organization.id,
      workspaceId: workspace.id,
      role: RUN_TOKEN_ROLE,
    },
    defaultWorkspaceId: workspace.id,
    prefetched: { workspaceId: workspace.id, workspace },
    runCreator: scope.runCreator,
  };
}
