import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { BulkExportService } from "../../../gen/agentplane/export/v1/bulk_export_service_pb.js";
import type { BulkExportSettings } from "../../config.js";
import { sealCredentials } from "../../export/destination-credentials.js";
import { DestinationError } from "../../export/destination-error.js";
import { probeKey } from "../../export/export-layout.js";
import { insertExportWithRuns } from "../../export/new-export.js";
import {
  checkDestination,
  destinationPolicy,
  type S3Credentials,
  type S3Target,
} from "../../export/s3-destination.js";
import { uuidv7 } from "../../ids.js";
import { dispatchExportRuns, type ExportDispatchDeps } from "../../jobs/bulk-export-dispatch.js";
import type { SecretBox } from "../../store/crypto/secret-box.js";
import type { Sql } from "../../store/db.js";
import {
  findDestination,
  findDestinationForExport,
  insertDestination,
  listDestinations,
  markDestinationDeleted,
  updateDestinationCredentials,
} from "../../store/export/bulk-export-destination-store.js";
import {
  findExportRun,
  listExportRuns,
  listScheduledExportRuns,
} from "../../store/export/bulk-export-run-store.js";
import {
  type ExportRecord,
  findExport,
  finishExport,
  listExports,
} from "../../store/export/bulk-export-store.js";
import { findProjectIds } from "../../store/tracing/run-query-store.js";
import { inWorkspaceScope } from "../../store/tracing/workspace-scope.js";
import { authorizeWorkspace } from "../iam/principal.js";
import { invalid, requireUuid } from "../request-validation.js";
import { toDestinationMessage, toExportMessage, toRunMessage } from "./bulk-export-messages.js";
import {
  parseDestinationRequest,
  parseExportRequest,
  parseUpdatedCredentials,
} from "./bulk-export-requests.js";

/** Dependencies of {@link createBulkExportService}. */
export interface BulkExportServiceDeps extends Omit<ExportDispatchDeps, "settings"> {
  sql: Sql;
  secrets: SecretBox;
  settings: BulkExportSettings;
}

/** The plans that may export (the seed: Plus and Enterprise). */
const EXPORT_PLANS = ["plus", "enterprise"];
/** Page size of ListBulkExports when none is given, and the largest accepted. */
const DEFAULT_PAGE_SIZE = 100;
const MAX_PAGE_SIZE = 1000;

/** BulkExportService: destinations, exports and their runs, scoped to the caller's workspace. */
export function createBulkExportService(deps: BulkExportServiceDeps): ServiceImpl<typeof BulkExportService> {
  const { sql, secrets } = deps;

  return {
    async createDestination(request, ctx) {
      const { workspace } = await authorizeExport(ctx);
      const input = parseDestinationRequest(request);
      const id = uuidv7();
      await validateDestination({ location: input.location, credentials: input.credentials }, id);
      const destination = await insertDestination(sql, {
        id,
        workspaceId: workspace.id,
        displayName: input.displayName,
        ...input.location,
        credentialsSealed: input.credentials
          ? sealCredentials(secrets, { workspaceId: workspace.id, destinationId: id }, input.credentials)
          : null,
        credentialsKeys: input.credentials ? credentialFieldNames(input.credentials) : [],
      });
      return toDestinationMessage(destination);
    },

    async listDestinations(_request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "bulk-exports:read");
      return { destinations: (await listDestinations(sql, workspace.id)).map(toDestinationMessage) };
    },

    async getDestination(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "bulk-exports:read");
      const id = requireUuid(request.destinationId, "destination_id");
      const destination = await findDestination(sql, workspace.id, id);
      if (!destination) throw destinationNotFound(id);
      return toDestinationMessage(destination);
    },

    async updateDestination(request, ctx) {
      const { workspace } = await authorizeExport(ctx);
      const id = requireUuid(request.destinationId, "destination_id");
      const credentials = parseUpdatedCredentials(request.credentials);
      const destination = await findDestination(sql, workspace.id, id);
      if (!destination) throw destinationNotFound(id);
      await validateDestination({ location: destination, credentials }, id);
      const updated = await updateDestinationCredentials(sql, workspace.id, id, {
        sealed: sealCredentials(secrets, { workspaceId: workspace.id, destinationId: id }, credentials),
        keys: credentialFieldNames(credentials),
      });
      if (!updated) throw destinationNotFound(id);
      return toDestinationMessage(updated);
    },

    async deleteDestination(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "bulk-exports:manage");
      const id = requireUuid(request.destinationId, "destination_id");
      if (!(await markDestinationDeleted(sql, workspace.id, id))) throw destinationNotFound(id);
      return {};
    },

    async createBulkExport(request, ctx) {
      const { workspace } = await authorizeExport(ctx);
      const input = parseExportRequest(request);
      if (!(await findDestination(sql, workspace.id, input.destinationId)))
        throw destinationNotFound(input.destinationId);
      const projects = await inWorkspaceScope(sql, [workspace.id], (q) =>
        findProjectIds(q, workspace.id, [input.sessionId]),
      );
      if (projects.length === 0)
        throw new ConnectError(
          `tracing project ${input.sessionId} not found in this workspace`,
          Code.NotFound,
        );
      const created = await sql.begin(async (tx) => {
        const record = await insertExportWithRuns(tx, {
          id: uuidv7(),
          workspaceId: workspace.id,
          destinationId: input.destinationId,
          sessionId: input.sessionId,
          startTime: input.startTime,
          endTime: input.endTime,
          filter: input.filter,
          exportFields: input.exportFields,
          intervalHours: input.intervalHours,
          formatVersion: input.formatVersion,
          compression: "zstandard",
          status: input.intervalHours === null ? "Created" : "IntervalScheduled",
          sourceBulkExportId: null,
          nextWindowStart: input.intervalHours === null ? null : input.startTime,
        });
        if (record && record.endTime !== null) await dispatchExportRuns(tx, deps, workspace.id);
        return record;
      });
      if (!created) throw new Error("a new export was not inserted");
      return toExportMessage(created);
    },

    async listBulkExports(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "bulk-exports:read");
      const limit = request.limit ?? DEFAULT_PAGE_SIZE;
      if (limit < 1 || limit > MAX_PAGE_SIZE)
        throw invalid(`limit must be 1 to ${MAX_PAGE_SIZE}; got ${limit}`);
      const offset = request.offset ?? 0;
      if (offset < 0) throw invalid(`offset must not be negative; got ${offset}`);
      const exports = await listExports(sql, workspace.id, { limit, offset });
      return { bulkExports: exports.map(toExportMessage) };
    },

    async getBulkExport(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "bulk-exports:read");
      return toExportMessage(await mustFindExport(workspace.id, request.bulkExportId));
    },

    async updateBulkExport(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "bulk-exports:manage");
      const id = requireUuid(request.bulkExportId, "bulk_export_id");
      if (request.status.toLowerCase() !== "cancelled")
        throw invalid(
          `status must be "Cancelled", the only status an export can be set to; got ${JSON.stringify(request.status)}`,
        );
      const updated = await sql.begin(async (tx) => {
        const record = await finishExport(tx, workspace.id, id, "Cancelled", "Cancelled");
        if (record) await dispatchExportRuns(tx, deps, workspace.id);
        return record;
      });
      if (!updated) throw exportNotFound(id);
      if (updated.status !== "Cancelled")
        throw new ConnectError(
          `bulk export ${id} is already ${updated.status} and cannot be cancelled`,
          Code.FailedPrecondition,
        );
      return toExportMessage(updated);
    },

    async listBulkExportRuns(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "bulk-exports:read");
      const e = await mustFindExport(workspace.id, request.bulkExportId);
      const destination = await findDestinationForExport(sql, workspace.id, e.destinationId);
      const runs = await listExportRuns(sql, workspace.id, e.id);
      return { runs: runs.map((r) => toRunMessage(r, e, destination)) };
    },

    async listScheduledExportRuns(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "bulk-exports:read");
      if (request.sourceBulkExportId === "")
        throw invalid("source_bulk_export_id is required: the id of a scheduled bulk export");
      const schedule = await mustFindExport(workspace.id, request.sourceBulkExportId);
      const destination = await findDestinationForExport(sql, workspace.id, schedule.destinationId);
      const runs = await listScheduledExportRuns(sql, workspace.id, schedule.id);
      // A spawned export carries its schedule's workspace, project and destination.
      return { runs: runs.map((r) => toRunMessage(r, { ...schedule, id: r.bulkExportId }, destination)) };
    },

    async getBulkExportRun(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "bulk-exports:read");
      const e = await mustFindExport(workspace.id, request.bulkExportId);
      const runId = requireUuid(request.runId, "run_id");
      const run = await findExportRun(sql, workspace.id, e.id, runId);
      if (!run) throw new ConnectError(`run ${runId} of bulk export ${e.id} not found`, Code.NotFound);
      return toRunMessage(run, e, await findDestinationForExport(sql, workspace.id, e.destinationId));
    },
  };

  /**
   * Writes and deletes a test object with `target`, as creating or updating destination `id` does;
   * throws what to fix (422) or that the store failed (503).
   */
  async function validateDestination(target: Omit<S3Target, "policy">, id: string): Promise<void> {
    try {
      await checkDestination(
        { ...target, policy: destinationPolicy(deps.settings.allowPrivateEndpoints) },
        probeKey(target.location, id),
      );
    } catch (error) {
      if (error instanceof DestinationError)
        throw invalid(`Failed to validate S3 destination: ${error.problem} (${error.detail})`);
      throw new ConnectError(
        "Failed to validate S3 destination: the store answered with a server error; try again later",
        Code.Unavailable,
      );
    }
  }

  async function mustFindExport(workspaceId: string, rawId: string): Promise<ExportRecord> {
    const id = requireUuid(rawId, "bulk_export_id");
    const found = await findExport(sql, workspaceId, id);
    if (!found) throw exportNotFound(id);
    return found;
  }
}

/** The caller may manage exports in its workspace, and its organization's plan includes bulk export. */
async function authorizeExport(ctx: HandlerContext) {
  const authorized = await authorizeWorkspace(ctx, "bulk-exports:manage");
  const plan = authorized.principal.organization.plan;
  if (!EXPORT_PLANS.includes(plan))
    throw new ConnectError(
      `bulk export needs the Plus or Enterprise plan; this organization is on the ${plan} plan`,
      Code.PermissionDenied,
    );
  return authorized;
}

/** The names of the credential fields given, as `credentials_keys` lists them. */
function credentialFieldNames(c: S3Credentials): string[] {
  return ["access_key_id", "secret_access_key", ...(c.sessionToken ? ["session_token"] : [])];
}

function destinationNotFound(id: string): ConnectError {
  return new ConnectError(`bulk export destination ${id} not found in this workspace`, Code.NotFound);
}

function exportNotFound(id: string): ConnectError {
  return new ConnectError(`bulk export ${id} not found in this workspace`, Code.NotFound);
}
