import type { JsonObject } from "@bufbuild/protobuf";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type Cron,
  CronSchema,
  type CronService,
} from "../../../gen/agentplane/agents/v1/cron_service_pb.js";
import type { Clock } from "../../clock.js";
import type { WebhookSettings } from "../../config.js";
import { isUuid, uuidv7 } from "../../ids.js";
import {
  CRON_SORT_COLUMNS,
  type CronFilter,
  type CronRecord,
  countCrons,
  deleteCron,
  findCron,
  insertCron,
  searchCrons,
  updateCron,
} from "../../store/agents/agent-cron-store.js";
import { threadExists } from "../../store/agents/agent-run-thread-store.js";
import { findVisibleThread } from "../../store/agents/thread-store.js";
import { PgCode, pgErrorCode, type Sql } from "../../store/db.js";
import type { AuthFilter } from "../../store/filters/auth-filter-sql.js";
import { authorizeEvent, authorizeWorkspace, creatorOf, type Principal } from "../iam/principal.js";
import { invalid, oneOf, requireUuid } from "../request-validation.js";
import { applyCronUpdate, parseCreateCron } from "./cron-requests.js";
import { refuseEncryptedFilter } from "./encrypted-filter.js";
import { toValue } from "./json-value.js";
import { resolveAssistant } from "./run-assistant.js";
import { checkWebhook } from "./run-authorization.js";
import type { SystemAssistants } from "./system-assistants.js";
import { handlerMetadata, threadNotFound } from "./thread-access.js";
import { parseLimit, parseOffset } from "./thread-requests.js";

/** Dependencies of {@link createCronService}. */
export interface CronServiceDeps {
  sql: Sql;
  systemAssistants: SystemAssistants;
  /** The graph ids served (named when an assistant is not found). */
  graphIds: () => string[];
  /** Decides what is in the past (end times) and when a cron fires first. */
  clock: Clock;
  /** Which webhook URLs runs may name: a cron's is checked when it is stored, not when it fires. */
  webhooks: WebhookSettings;
}

/** Default page size of a search, as the LangGraph SDK sends it. */
const DEFAULT_LIMIT = 10;
/** Fields a search may `select`: those of a cron. */
const CRON_FIELDS = [
  "cron_id",
  "assistant_id",
  "thread_id",
  "schedule",
  "timezone",
  "end_time",
  "enabled",
  "on_run_completed",
  "payload",
  "metadata",
  "next_run_date",
  "user_id",
  "created_at",
  "updated_at",
] as const;
type CronField = (typeof CRON_FIELDS)[number];

const nullable = (value: string | null) => toValue(value);
const time = (value: Date | null) => toValue(value === null ? null : value.toISOString());

/** A cron as the API shows it; with `select`, only those fields. */
export function cronView(cron: CronRecord, select?: ReadonlySet<CronField>): Cron {
  const want = (field: CronField) => !select || select.has(field);
  const view = create(CronSchema);
  if (want("cron_id")) view.cronId = cron.cronId;
  if (want("assistant_id")) view.assistantId = cron.assistantId;
  if (want("thread_id")) view.threadId = nullable(cron.threadId);
  if (want("schedule")) view.schedule = cron.schedule;
  if (want("timezone")) view.timezone = nullable(cron.timezone);
  if (want("end_time")) view.endTime = time(cron.endTime);
  if (want("enabled")) view.enabled = cron.enabled;
  if (want("on_run_completed")) view.onRunCompleted = nullable(cron.onRunCompleted);
  if (want("payload")) view.payload = cron.payload;
  if (want("metadata")) view.metadata = cron.metadata;
  if (want("next_run_date")) view.nextRunDate = time(cron.nextRunDate);
  if (want("user_id")) view.userId = nullable(cron.userId);
  if (want("created_at")) view.createdAt = timestampFromDate(cron.createdAt);
  if (want("updated_at")) view.updatedAt = timestampFromDate(cron.updatedAt);
  return view;
}

function cronNotFound(cronId: string): ConnectError {
  return new ConnectError(`cron ${cronId} not found`, Code.NotFound);
}

function parseSelect(select: readonly string[]): Set<CronField> | undefined {
  if (select.length === 0) return undefined;
  for (const field of select)
    if (!(CRON_FIELDS as readonly string[]).includes(field))
      throw invalid(`select: unknown field ${JSON.stringify(field)}; allowed: ${CRON_FIELDS.join(", ")}`);
  return new Set(select as CronField[]);
}

/** CronService: creating, reading, updating, deleting, searching and counting crons. */
export function createCronService(deps: CronServiceDeps): ServiceImpl<typeof CronService> {
  const { sql, clock } = deps;

  /** A filter's assistant: a UUID, or a graph id meaning its system assistant. */
  const assistantFilter = (raw: string | undefined): string | undefined => {
    if (raw === undefined) return undefined;
    if (isUuid(raw)) return raw.toLowerCase();
    const id = deps.systemAssistants.idOfGraph(raw);
    if (!id)
      throw invalid(
        `assistant_id "${raw}" is neither a UUID nor a graph id (graphs: ${deps.graphIds().join(", ")})`,
      );
    return id;
  };
  const filterOf = (request: {
    assistantId?: string;
    threadId?: string;
    metadata?: CronFilter["metadata"];
  }): CronFilter => {
    refuseEncryptedFilter(sql, "metadata", request.metadata);
    const assistantId = assistantFilter(request.assistantId);
    return {
      ...(assistantId !== undefined ? { assistantId } : {}),
      ...(request.threadId !== undefined ? { threadId: requireUuid(request.threadId, "thread_id") } : {}),
      ...(request.metadata ? { metadata: request.metadata } : {}),
    };
  };

  /** Refuses (422) a payload whose `webhook` its runs could never call, as a run create would. */
  const checkPayloadWebhook = (payload: JsonObject): Promise<void> =>
    checkWebhook(typeof payload.webhook === "string" ? payload.webhook : null, deps.webhooks);

  return {
    async createCron(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:write");
      const stateless = request.threadId === undefined;
      const threadId = stateless ? null : requireUuid(request.threadId ?? "", "thread_id");
      const input = parseCreateCron(request, stateless, clock.now());
      await checkPayloadWebhook(input.payload);
      const assistant = await resolveAssistant(deps, workspace.id, request.assistantId, principal);
      const value = {
        cron_id: undefined,
        thread_id: threadId ?? undefined,
        schedule: input.timing.schedule,
        end_time: input.timing.endTime?.toISOString(),
        payload: { ...input.payload },
        metadata: { ...input.metadata },
      };
      await authorizeEvent(principal, "crons:create", value);
      const metadata = handlerMetadata(value, "crons:create");
      if (threadId !== null && !(await threadExists(sql, workspace.id, threadId)))
        throw threadNotFound(threadId);
      // A cron on a thread runs on it: the thread must be one the caller sees.
      if (threadId !== null) {
        const auth = await authorizeEvent(principal, "threads:read", { thread_id: threadId });
        if (auth && !(await findVisibleThread(sql, { workspaceId: workspace.id, threadId }, auth)))
          throw threadNotFound(threadId);
      }
      try {
        const cron = await insertCron(sql, {
          workspaceId: workspace.id,
          cronId: uuidv7(),
          assistantId: assistant.assistantId,
          threadId,
          schedule: input.timing.schedule,
          timezone: input.timing.timezone,
          endTime: input.timing.endTime,
          enabled: input.enabled,
          onRunCompleted: input.onRunCompleted,
          payload: { ...input.payload, assistant_id: assistant.assistantId },
          metadata,
          userId: principal.user?.id ?? null,
          nextRunDate: input.nextRunDate,
          creator: creatorOf(principal),
        });
        return cronView(cron);
      } catch (error) {
        // The thread or assistant went between the check and the insert.
        if (pgErrorCode(error) === PgCode.foreignKeyViolation)
          throw new ConnectError(
            `the cron's ${threadId === null ? "assistant" : "thread or assistant"} was deleted meanwhile`,
            Code.NotFound,
          );
        throw error;
      }
    },

    async getCron(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:read");
      const cronId = requireUuid(request.cronId, "cron_id");
      const auth = await authorizeEvent(principal, "crons:read", { cron_id: cronId });
      const cron = await findCron(sql, workspace.id, cronId, { auth });
      if (!cron) throw cronNotFound(cronId);
      return cronView(cron);
    },

    async updateCron(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:write");
      const cronId = requireUuid(request.cronId, "cron_id");
      const auth = await authorizeEvent(principal, "crons:update", { cron_id: cronId });
      const updated = await sql.begin(async (tx) => {
        const cron = await findCron(tx, workspace.id, cronId, { forUpdate: true, auth });
        if (!cron) throw cronNotFound(cronId);
        const changed = applyCronUpdate(cron, request, clock.now());
        await checkPayloadWebhook(changed.payload);
        return updateCron(tx, workspace.id, cronId, changed);
      });
      if (!updated) throw cronNotFound(cronId);
      return cronView(updated);
    },

    async deleteCron(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:write");
      const cronId = requireUuid(request.cronId, "cron_id");
      const auth = await authorizeEvent(principal, "crons:delete", { cron_id: cronId });
      if (!(await deleteCron(sql, workspace.id, cronId, auth))) throw cronNotFound(cronId);
      return {};
    },

    async searchCrons(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:read");
      const limit = parseLimit(request.limit, DEFAULT_LIMIT);
      const offset = parseOffset(request.offset);
      const sortBy = oneOf(request.sortBy, CRON_SORT_COLUMNS, "sort_by", "created_at");
      const descending = oneOf(request.sortOrder, ["asc", "desc"] as const, "sort_order", "desc") === "desc";
      const select = parseSelect(request.select);
      const filter: CronFilter = {
        ...filterOf(request),
        ...(request.enabled !== undefined ? { enabled: request.enabled } : {}),
        ...(await cronSearchAuth(principal, request)),
      };
      const { crons, total } = await searchCrons(sql, workspace.id, filter, {
        sortBy,
        descending,
        limit,
        offset,
      });
      ctx.responseHeader.set("X-Pagination-Total", String(total));
      if (offset + crons.length < total) ctx.responseHeader.set("X-Pagination-Next", String(offset + limit));
      return { crons: crons.map((c) => cronView(c, select)) };
    },

    async countCrons(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:read");
      return {
        count: await countCrons(sql, workspace.id, {
          ...filterOf(request),
          ...(await cronSearchAuth(principal, request)),
        }),
      };
    },
  };
}

/** Custom auth's `crons:search` filter, as a {@link CronFilter} part. */
async function cronSearchAuth(
  principal: Principal,
  request: { assistantId?: string; threadId?: string },
): Promise<{ auth?: AuthFilter }> {
  const auth = await authorizeEvent(principal, "crons:search", {
    assistant_id: request.assistantId,
    thread_id: request.threadId,
  });
  return auth ? { auth } : {};
}
