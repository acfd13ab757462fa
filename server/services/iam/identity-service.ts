import { ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { IdentityService } from "../../../gen/agentplane/iam/v1/identity_service_pb.js";
import { organizationMessage, userMessage, workspaceMessage } from "./iam-messages.js";
import { permissionsOf, principalOf } from "./principal.js";

/** IdentityService: who the caller is. */
export function createIdentityService(): ServiceImpl<typeof IdentityService> {
  return {
    async whoami(_request, ctx) {
      const principal = principalOf(ctx);
      // Whoami answers even when no workspace applies (say a service key over several workspaces
      // without x-tenant-id): the workspace is then simply absent.
      const workspace = await principal.workspace().catch((error: unknown) => {
        if (error instanceof ConnectError) return undefined;
        throw error;
      });
      return {
        organization: organizationMessage(principal.organization),
        user: principal.user ? userMessage(principal.user) : undefined,
        apiKeyId: principal.apiKey?.id ?? "",
        apiKeyShortKey: principal.apiKey?.shortKey ?? "",
        apiKeyKind: principal.apiKey?.kind ?? "",
        organizationRole: principal.organizationRole,
        workspace: workspace && workspaceMessage(workspace),
        permissions: permissionsOf(principal, workspace),
      };
    },
  };
}
