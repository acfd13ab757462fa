import { ApiKeyService } from "../gen/agentplane/iam/v1/api_key_service_pb.js";
import { IdentityService } from "../gen/agentplane/iam/v1/identity_service_pb.js";
import { WorkspaceService } from "../gen/agentplane/iam/v1/workspace_service_pb.js";
import type { Config } from "./config.js";
import type { JobRegistry } from "./jobs/job-registry.js";
import type { Queue } from "./jobs/queue.js";
import type { Logger } from "./logger.js";
import { createApiKeyService } from "./services/iam/api-key-service.js";
import type { Authenticator } from "./services/iam/authenticator.js";
import { createIdentityService } from "./services/iam/identity-service.js";
import { createWorkspaceService } from "./services/iam/workspace-service.js";
import type { Sql } from "./store/db.js";
import { type BindOptions, type BoundService, bindService } from "./transport/bound-service.js";
import type { HttpAdapter } from "./transport/http-handler.js";

/** What the API services are built from. */
export interface ServiceDeps {
  readonly config: Config;
  readonly sql: Sql;
  readonly queue: Queue;
  readonly jobs: JobRegistry;
  readonly log: Logger;
}

/**
 * Every authenticated API service, bound with the guard and error policy. The one list a new
 * service is added to; the composition root serves them on every protocol.
 */
export function createApiServices(
  deps: ServiceDeps,
  bind: Required<Pick<BindOptions, "guard">> & BindOptions,
): BoundService[] {
  const { sql, queue, jobs } = deps;
  return [
    bindService(IdentityService, createIdentityService(), bind),
    bindService(
      WorkspaceService,
      createWorkspaceService({ sql, queue, purgeJob: jobs.workspacePurge }),
      bind,
    ),
    bindService(ApiKeyService, createApiKeyService({ sql }), bind),
  ];
}

/**
 * The REST-only routes of the API (for what is not an RPC: multipart uploads, file downloads, web
 * pages), tried in order before the REST transcoder. The one list a new adapter is added to.
 */
export function createRestAdapters(_deps: ServiceDeps, _auth: Authenticator): HttpAdapter[] {
  return [];
}
