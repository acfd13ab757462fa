import type { JsonObject as ProtoJsonObject } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type {
  ProjectService,
  TracerSession,
  TracerSessionUpdate,
} from "../../../gen/agentplane/tracing/v1/project_service_pb.js";
import { uuidv7 } from "../../ids.js";
import { PgCode, pgErrorCode, type Sql } from "../../store/db.js";
import {
  deleteProject,
  findProject,
  findProjectByName,
  insertProject,
  listProjects,
  type ProjectRecord,
  updateProject,
} from "../../store/tracing/project-store.js";
import type { JsonObject } from "../../store/tracing/trace-rows.js";
import { inWorkspaceScope, type WorkspaceBound } from "../../store/tracing/workspace-scope.js";
import { MAX_PROJECT_NAME } from "../../tracing/run-normalizer.js";
import { authorizeWorkspace } from "../iam/principal.js";
import { invalid, requireUuid } from "../request-validation.js";

/** Page size of ListProjects when the request gives none, and the largest accepted (LangSmith's). */
const MAX_PAGE_SIZE = 100;
/** Retention tiers LangSmith knows. */
const TRACE_TIERS = ["longlived", "shortlived"];

/** Dependencies of {@link createProjectService}. */
export interface ProjectServiceDeps {
  sql: Sql;
}

/**
 * ProjectService: tracing projects of the caller's workspace, as the langsmith SDK manages them.
 * Every call works in a workspace scope (row-level security) of that workspace.
 */
export function createProjectService({ sql }: ProjectServiceDeps): ServiceImpl<typeof ProjectService> {
  const scoped = <T>(workspaceId: string, work: (q: WorkspaceBound) => Promise<T>) =>
    inWorkspaceScope(sql, [workspaceId], work);
  return {
    async createProject(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "projects:create");
      const s = request.session;
      if (!s) throw invalid('the body must be a project: {"name": ...}');
      const name = requireName(s.name);
      if (request.upsert) {
        const existing = await scoped(workspace.id, (q) => findProjectByName(q, workspace.id, name));
        if (existing) return toSession(existing);
      }
      if (s.traceTier !== undefined && !TRACE_TIERS.includes(s.traceTier))
        throw invalid(`trace_tier must be one of ${TRACE_TIERS.join(", ")}`);
      const { metadata, rest } = splitExtra(s.extra);
      const id = s.id === undefined ? uuidv7() : requireUuid(s.id, "id");
      const project = {
        id,
        workspaceId: workspace.id,
        name,
        description: s.description ?? null,
        metadata,
        extra: rest,
        referenceDatasetId: optionalUuid(s.referenceDatasetId, "reference_dataset_id"),
        defaultDatasetId: optionalUuid(s.defaultDatasetId, "default_dataset_id"),
        traceTier: s.traceTier ?? null,
        startTime: s.startTime ? timestampDate(s.startTime) : null,
        endTime: s.endTime ? timestampDate(s.endTime) : null,
      };
      try {
        const created = await scoped(workspace.id, async (q) => {
          await insertProject(q, project);
          return mustFind(q, workspace.id, id);
        });
        return toSession(created);
      } catch (error) {
        if (pgErrorCode(error) !== PgCode.uniqueViolation) throw error;
        const existing = await scoped(workspace.id, (q) => findProjectByName(q, workspace.id, name));
        if (existing && request.upsert) return toSession(existing);
        throw new ConnectError(
          existing
            ? `a tracing project named "${name}" already exists in this workspace; send ?upsert=true to get it instead`
            : `a tracing project with id ${id} already exists`,
          Code.AlreadyExists,
        );
      }
    },

    async listProjects(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "projects:read");
      const limit = request.limit ?? MAX_PAGE_SIZE;
      if (limit < 1 || limit > MAX_PAGE_SIZE) throw invalid(`limit must be 1 to ${MAX_PAGE_SIZE}`);
      const offset = request.offset ?? 0;
      if (offset < 0) throw invalid("offset must not be negative");
      const filter = {
        ...(request.id.length > 0 ? { ids: request.id.map((id) => requireUuid(id, "id")) } : {}),
        ...(request.name !== undefined ? { name: request.name } : {}),
        ...(request.nameContains !== undefined ? { nameContains: request.nameContains } : {}),
        ...(request.referenceDataset !== undefined
          ? { referenceDatasetId: requireUuid(request.referenceDataset, "reference_dataset") }
          : {}),
        ...(request.referenceFree !== undefined ? { referenceFree: request.referenceFree } : {}),
        ...(request.metadata !== undefined ? { metadata: parseMetadata(request.metadata) } : {}),
        limit,
        offset,
      };
      const sessions = await scoped(workspace.id, (q) => listProjects(q, workspace.id, filter));
      return { sessions: sessions.map(toSession) };
    },

    async getProject(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "projects:read");
      const id = requireUuid(request.sessionId, "session_id");
      return toSession(await scoped(workspace.id, (q) => mustFind(q, workspace.id, id)));
    },

    async updateProject(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "projects:update");
      const id = requireUuid(request.sessionId, "session_id");
      const u: Partial<TracerSessionUpdate> = request.update ?? {};
      const extra = u.extra === undefined ? undefined : splitExtra(u.extra);
      const change = {
        ...(u.name !== undefined ? { name: requireName(u.name) } : {}),
        ...(u.description !== undefined ? { description: u.description } : {}),
        ...(extra ? { metadata: extra.metadata, extra: extra.rest } : {}),
        ...(u.endTime ? { endTime: timestampDate(u.endTime) } : {}),
      };
      try {
        const updated = await scoped(workspace.id, async (q) => {
          if (!(await updateProject(q, workspace.id, id, change))) throw notFound(id);
          return mustFind(q, workspace.id, id);
        });
        return toSession(updated);
      } catch (error) {
        if (pgErrorCode(error) === PgCode.uniqueViolation)
          throw new ConnectError(
            `a tracing project named "${u.name}" already exists in this workspace`,
            Code.AlreadyExists,
          );
        throw error;
      }
    },

    async deleteProject(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "projects:delete");
      const id = requireUuid(request.sessionId, "session_id");
      const deleted = await scoped(workspace.id, (q) => deleteProject(q, workspace.id, id));
      if (!deleted) throw notFound(id);
      return {};
    },
  };
}

/** The wire form of a project: `extra` carries the metadata back under `extra.metadata`. */
function toSession(p: ProjectRecord): TracerSession {
  const s = p.stats;
  return {
    $typeName: "agentplane.tracing.v1.TracerSession",
    id: p.id,
    name: p.name,
    ...(p.description !== null ? { description: p.description } : {}),
    tenantId: p.workspaceId,
    startTime: timestampFromDate(p.startTime),
    ...(p.endTime ? { endTime: timestampFromDate(p.endTime) } : {}),
    // Stored from JSON, so every value is a JSON value.
    extra: (Object.keys(p.metadata).length > 0
      ? { ...p.extra, metadata: p.metadata }
      : p.extra) as ProtoJsonObject,
    ...(p.referenceDatasetId !== null ? { referenceDatasetId: p.referenceDatasetId } : {}),
    ...(p.defaultDatasetId !== null ? { defaultDatasetId: p.defaultDatasetId } : {}),
    ...(p.traceTier !== null ? { traceTier: p.traceTier } : {}),
    runCount: s.runCount,
    ...(s.lastRunStartTime ? { lastRunStartTime: timestampFromDate(s.lastRunStartTime) } : {}),
    ...(s.latencyP50 !== null ? { latencyP50: s.latencyP50 } : {}),
    ...(s.latencyP99 !== null ? { latencyP99: s.latencyP99 } : {}),
    totalTokens: s.totalTokens,
    promptTokens: s.promptTokens,
    completionTokens: s.completionTokens,
    ...(s.totalCost !== null ? { totalCost: s.totalCost } : {}),
    ...(s.promptCost !== null ? { promptCost: s.promptCost } : {}),
    ...(s.completionCost !== null ? { completionCost: s.completionCost } : {}),
    ...(s.errorRate !== null ? { errorRate: s.errorRate } : {}),
  };
}

async function mustFind(q: WorkspaceBound, workspaceId: string, id: string): Promise<ProjectRecord> {
  const found = await findProject(q, workspaceId, id);
  if (!found) throw notFound(id);
  return found;
}

/** `extra.metadata` (an object, else empty) and the rest of `extra`. */
function splitExtra(extra: JsonObject | undefined): { metadata: JsonObject; rest: JsonObject } {
  const { metadata, ...rest } = extra ?? {};
  if (
    metadata !== undefined &&
    metadata !== null &&
    (typeof metadata !== "object" || Array.isArray(metadata))
  )
    throw invalid("extra.metadata must be a JSON object");
  return { metadata: (metadata ?? {}) as JsonObject, rest };
}

function parseMetadata(text: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid('metadata must be a JSON object, such as {"env":"prod"}');
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw invalid('metadata must be a JSON object, such as {"env":"prod"}');
  return value as JsonObject;
}

function requireName(value: string): string {
  const name = value.trim();
  if (name.length === 0 || name.length > MAX_PROJECT_NAME)
    throw invalid(`name must be 1 to ${MAX_PROJECT_NAME} characters`);
  return name;
}

function optionalUuid(value: string | undefined, field: string): string | null {
  return value === undefined ? null : requireUuid(value, field);
}

function notFound(id: string): ConnectError {
  return new ConnectError(`tracing project ${id} not found`, Code.NotFound);
}
