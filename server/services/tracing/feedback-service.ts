import { fromJson, type JsonObject, type JsonValue, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { timestampFromDate, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type {
  FeedbackIngestTokenSchema,
  FeedbackSchema,
  FeedbackService,
} from "../../../gen/agentplane/tracing/v1/feedback_service_pb.js";
import { uuidv7 } from "../../ids.js";
import type { Sql } from "../../store/db.js";
import {
  createFeedback,
  deleteFeedback,
  type FeedbackChanges,
  type FeedbackRecord,
  findFeedback,
  listFeedback,
  lockFeedbackRuns,
  updateFeedback,
} from "../../store/tracing/feedback-store.js";
import { listFeedbackTokens } from "../../store/tracing/feedback-token-store.js";
import { findProjectIds } from "../../store/tracing/run-query-store.js";
import { refreshFeedbackStats } from "../../store/tracing/run-store.js";
import type { NormalizedFeedback } from "../../store/tracing/trace-rows.js";
import { inWorkspaceScope, type WorkspaceBound } from "../../store/tracing/workspace-scope.js";
import { feedbackScore, normalizeFeedback } from "../../tracing/run-normalizer.js";
import { authorizeWorkspace } from "../iam/principal.js";
import { invalid, requireUuid } from "../request-validation.js";
import {
  callerOrigin,
  type IssuedToken,
  issued,
  issueFeedbackTokens,
  parseFeedbackConfig,
  requireFeedbackKey,
  tokenExpiry,
} from "./feedback-tokens.js";

/** Largest page of ListFeedback, and the size when the request names none (the SDK asks for 100). */
const MAX_PAGE_SIZE = 100;

/** Dependencies of {@link createFeedbackService}. */
export interface FeedbackServiceDeps {
  sql: Sql;
}

/**
 * FeedbackService: feedback on the runs of the caller's workspace. Reading needs `runs:read`,
 * writing `runs:create` (feedback is part of the traces a key sends). Each change and the refresh
 * of its run's `feedback_stats` are one transaction in a workspace scope (row-level security).
 */
export function createFeedbackService({ sql }: FeedbackServiceDeps): ServiceImpl<typeof FeedbackService> {
  const scoped = <T>(workspaceId: string, work: (q: WorkspaceBound) => Promise<T>) =>
    inWorkspaceScope(sql, [workspaceId], work);
  return {
    async createFeedback(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:create");
      if (request.comparativeExperimentId !== undefined)
        throw invalid("comparative_experiment_id: comparative experiments are not supported by agentplane");
      if (request.feedbackGroupId !== undefined)
        throw invalid("feedback_group_id: feedback groups are not supported by agentplane");
      const item = normalizeFeedback({
        id: request.id === undefined ? uuidv7() : requireUuid(request.id, "id"),
        run_id: request.runId,
        trace_id: request.traceId,
        key: request.key,
        score: jsonOf(request.score),
        value: jsonOf(request.value),
        comment: request.comment,
        correction: jsonOf(request.correction),
        feedback_source: request.feedbackSource,
        session_id: request.sessionId,
      });
      return feedbackMessage(await storeFeedback(sql, workspace.id, item));
    },

    async listFeedback(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const limit = request.limit ?? MAX_PAGE_SIZE;
      if (limit < 1 || limit > MAX_PAGE_SIZE)
        throw invalid(`limit must be between 1 and ${MAX_PAGE_SIZE}, got ${limit}`);
      const offset = request.offset ?? 0;
      if (offset < 0) throw invalid(`offset must not be negative, got ${offset}`);
      const filter = {
        runIds: request.run.map((id, i) => requireUuid(id, `run[${i}]`)),
        keys: request.key,
        sources: request.source,
        sessionIds: request.session.map((id, i) => requireUuid(id, `session[${i}]`)),
        offset,
        limit,
      };
      const rows = await scoped(workspace.id, (q) => listFeedback(q, workspace.id, filter));
      return { feedback: rows.map(feedbackMessage) };
    },

    async getFeedback(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const id = requireUuid(request.feedbackId, "feedback_id");
      const row = await scoped(workspace.id, (q) => findFeedback(q, workspace.id, id));
      if (!row) throw notFound(id);
      return feedbackMessage(row);
    },

    async updateFeedback(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:create");
      const id = requireUuid(request.feedbackId, "feedback_id");
      const changes = feedbackChanges(request.update);
      const row = await scoped(workspace.id, async (q) => {
        const before = await findFeedback(q, workspace.id, id);
        if (!before) throw notFound(id);
        await lockFeedbackRuns(q, workspace.id, [before.run_id]);
        const after = await updateFeedback(q, workspace.id, id, changes);
        if (!after) throw notFound(id);
        await refreshFeedbackStats(q, workspace.id, [after.run_id]);
        return after;
      });
      return feedbackMessage(row);
    },

    async createFeedbackToken(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:create");
      const runId = requireUuid(request.runId, "run_id");
      const key = requireFeedbackKey(request.feedbackKey, "feedback_key");
      const expiresAt = tokenExpiry(request.expiresIn, request.expiresAt, new Date());
      const feedbackConfig = parseFeedbackConfig(request.feedbackConfig);
      const [token] = await issueFeedbackTokens(
        sql,
        { workspaceId: workspace.id, runId, origin: callerOrigin(ctx) },
        [key],
        { expiresAt, feedbackConfig },
      );
      return tokenMessage(token!);
    },

    async listFeedbackTokens(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:read");
      const runId = requireUuid(request.runId, "run_id");
      const limit = request.limit ?? MAX_PAGE_SIZE;
      if (limit < 1 || limit > MAX_PAGE_SIZE)
        throw invalid(`limit must be between 1 and ${MAX_PAGE_SIZE}, got ${limit}`);
      const offset = request.offset ?? 0;
      if (offset < 0) throw invalid(`offset must not be negative, got ${offset}`);
      const origin = callerOrigin(ctx);
      const rows = await listFeedbackTokens(sql, workspace.id, runId, { offset, limit });
      return { tokens: rows.map((row) => tokenMessage(issued(row, origin))) };
    },

    async deleteFeedback(request, ctx) {
      const { workspace } = await authorizeWorkspace(ctx, "runs:create");
      const id = requireUuid(request.feedbackId, "feedback_id");
      await scoped(workspace.id, async (q) => {
        const before = await findFeedback(q, workspace.id, id);
        if (!before) throw notFound(id);
        await lockFeedbackRuns(q, workspace.id, [before.run_id]);
        const runId = await deleteFeedback(q, workspace.id, id);
        if (runId === undefined) throw notFound(id);
        await refreshFeedbackStats(q, workspace.id, [runId], { clearEmpty: true });
      });
      return {};
    },
  };
}

/**
 * Stores a validated feedback item of the workspace and refreshes its run's `feedback_stats`, in
 * one transaction in the workspace's scope (row-level security). ALREADY_EXISTS for a taken id,
 * NOT_FOUND for a project the workspace does not have.
 */
export async function storeFeedback(
  sql: Sql,
  workspaceId: string,
  item: NormalizedFeedback,
): Promise<FeedbackRecord> {
  const stored = await inWorkspaceScope(sql, [workspaceId], async (q) => {
    if (item.sessionId !== null) {
      const [found] = await findProjectIds(q, workspaceId, [item.sessionId]);
      if (!found) throw new ConnectError(`project ${item.sessionId} not found`, Code.NotFound);
    }
    await lockFeedbackRuns(q, workspaceId, [item.runId]);
    if (!(await createFeedback(q, workspaceId, item)))
      throw new ConnectError(`feedback ${item.id} already exists`, Code.AlreadyExists);
    await refreshFeedbackStats(q, workspaceId, [item.runId]);
    return findFeedback(q, workspaceId, item.id);
  });
  if (!stored) throw new Error(`feedback ${item.id} vanished after it was stored`);
  return stored;
}

function notFound(id: string): ConnectError {
  return new ConnectError(`feedback ${id} not found`, Code.NotFound);
}

/** The JSON of a google.protobuf.Value field; undefined when absent, null for JSON null. */
export function jsonOf(value: Value | undefined): JsonValue | undefined {
  return value === undefined ? undefined : toJson(ValueSchema, value);
}

/** The changes of an update body, validated like a create's fields. */
function feedbackChanges(
  update: { score?: Value; value?: Value; comment?: string; correction?: Value } | undefined,
): FeedbackChanges {
  if (!update) return {};
  const changes: FeedbackChanges = {};
  if (update.score !== undefined)
    changes.score = feedbackScore(jsonOf(update.score), (rule) => invalid(rule));
  if (update.value !== undefined) changes.value = jsonOf(update.value);
  if (update.comment !== undefined) changes.comment = update.comment;
  if (update.correction !== undefined) changes.correction = jsonOf(update.correction);
  return changes;
}

/** A handed-out token as the API answers it. */
function tokenMessage(token: IssuedToken): MessageInitShape<typeof FeedbackIngestTokenSchema> {
  return { id: token.id, url: token.url, expiresAt: timestampFromDate(token.expiresAt) };
}

/** The Feedback message of a stored item; null values stay unset (REST leaves them out). */
function feedbackMessage(row: FeedbackRecord): MessageInitShape<typeof FeedbackSchema> {
  const value = (json: unknown) =>
    json === null || json === undefined ? undefined : fromJson(ValueSchema, json as JsonValue);
  return {
    id: row.id,
    runId: row.run_id,
    traceId: row.trace_id ?? undefined,
    key: row.key,
    score: row.score === null ? undefined : value(row.score),
    value: value(row.value),
    comment: row.comment ?? undefined,
    correction: value(row.correction),
    feedbackSource: (row.feedback_source ?? undefined) as JsonObject | undefined,
    sessionId: row.session_id ?? undefined,
    createdAt: timestampFromDate(new Date(row.created_at)),
    modifiedAt: timestampFromDate(new Date(row.modified_at)),
  };
}
