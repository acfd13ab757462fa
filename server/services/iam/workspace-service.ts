import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { WorkspaceService } from "../../../gen/agentplane/iam/v1/workspace_service_pb.js";
import { uuidv7 } from "../../ids.js";
import type { JobDefinition } from "../../jobs/job-definition.js";
import type { Queue } from "../../jobs/queue.js";
import type { WorkspacePurgePayload } from "../../jobs/workspace-purge-job.js";
import { PgCode, pgErrorCode, type Sql } from "../../store/db.js";
import { addApiKeyWorkspace } from "../../store/iam/api-key-store.js";
import { upsertWorkspaceMember } from "../../store/iam/member-store.js";
import { lockOrganization } from "../../store/iam/organization-store.js";
import {
  countLiveWorkspaces,
  insertWorkspace,
  listGrantedWorkspaces,
  markWorkspaceDeleted,
} from "../../store/iam/workspace-store.js";
import { requireUuid } from "../request-validation.js";
import { workspaceMessage } from "./iam-messages.js";
import { authorizeOrganization, authorizeWorkspace, principalOf } from "./principal.js";

/** Longest display name accepted: fits every UI this product has. */
const MAX_DISPLAY_NAME = 200;
/** Handle rule: DNS-label-like, so it can appear in URLs and file paths unescaped. */
const HANDLE_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Dependencies of {@link createWorkspaceService}. */
export interface WorkspaceServiceDeps {
  sql: Sql;
  queue: Pick<Queue, "enqueue">;
  /** The job that removes a deleted workspace's data. */
  purgeJob: JobDefinition<WorkspacePurgePayload>;
}

/** WorkspaceService: create, list, get and delete workspaces of the caller's organization. */
export function createWorkspaceService({
  sql,
  queue,
  purgeJob,
}: WorkspaceServiceDeps): ServiceImpl<typeof WorkspaceService> {
  return {
    async createWorkspace(request, ctx) {
      const principal = authorizeOrganization(ctx, "workspaces:manage");
      const displayName = request.displayName.trim();
      if (displayName.length === 0 || displayName.length > MAX_DISPLAY_NAME) {
        throw new ConnectError(
          `display_name must be 1 to ${MAX_DISPLAY_NAME} characters`,
          Code.InvalidArgument,
        );
      }
      const explicitHandle = request.tenantHandle.trim();
      if (explicitHandle && !HANDLE_PATTERN.test(explicitHandle)) {
        throw new ConnectError(
          "tenant_handle must be 1 to 63 lowercase letters, digits or '-', starting and ending with a letter or digit",
          Code.InvalidArgument,
        );
      }
      const id = uuidv7();
      const tenantHandle = explicitHandle || `${slugify(displayName)}-${id.slice(-6)}`;
      try {
        await sql.begin(async (tx) => {
          await insertWorkspace(tx, {
            id,
            organizationId: principal.organization.id,
            displayName,
            tenantHandle,
            isPersonal: false,
          });
          // A creator who does not already reach every workspace becomes the new one's admin.
          if (principal.grant.kind === "user")
            await upsertWorkspaceMember(tx, id, principal.grant.userId, "admin");
          if (principal.grant.kind === "api-key") {
            await addApiKeyWorkspace(tx, principal.grant.apiKeyId, id);
          }
        });
      } catch (error) {
        if (pgErrorCode(error) === PgCode.uniqueViolation) {
          throw new ConnectError(
            `a workspace with tenant_handle "${tenantHandle}" already exists`,
            Code.AlreadyExists,
          );
        }
        throw error;
      }
      const [created] = await listGrantedWorkspaces(sql, principal.grant, id);
      if (!created) throw new Error(`workspace ${id} vanished right after creation`);
      return workspaceMessage(created);
    },

    async listWorkspaces(_request, ctx) {
      const principal = principalOf(ctx);
      const workspaces = await listGrantedWorkspaces(sql, principal.grant);
      return { workspaces: workspaces.map(workspaceMessage) };
    },

    async getCurrentWorkspace(_request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "workspaces:read");
      return workspaceMessage(workspace);
    },

    async getWorkspace(request, ctx) {
      const principal = principalOf(ctx);
      const id = requireUuid(request.workspaceId, "workspace_id");
      const [ws] = await listGrantedWorkspaces(sql, principal.grant, id);
      if (!ws) throw notFound(id);
      return workspaceMessage(ws);
    },

    async deleteWorkspace(request, ctx) {
      const principal = authorizeOrganization(ctx, "workspaces:manage");
      const id = requireUuid(request.workspaceId, "workspace_id");
      await sql.begin(async (tx) => {
        await lockOrganization(tx, principal.organization.id);
        const [ws] = await listGrantedWorkspaces(tx, principal.grant, id);
        if (!ws) throw notFound(id);
        if ((await countLiveWorkspaces(tx, principal.organization.id)) <= 1) {
          throw new ConnectError(
            "the last workspace of an organization cannot be deleted: create another one first",
            Code.FailedPrecondition,
          );
        }
        await markWorkspaceDeleted(tx, principal.organization.id, id);
        await queue.enqueue(purgeJob, { workspaceId: id }, { tx });
      });
      return {};
    },
  };
}

function notFound(id: string): ConnectError {
  return new ConnectError(`workspace ${id} not found`, Code.NotFound);
}

/** Lowercase letters and digits of a name joined by '-', at most 50 characters; "workspace" when none. */
function slugify(name: string): string {
  const slug = name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 50)
    .replace(/-+$/, "");
  return slug || "workspace";
}
