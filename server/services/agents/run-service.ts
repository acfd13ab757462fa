import { create, fromJson, toJson } from "@bufbuild/protobuf";
import { timestampFromDate, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type CreateRunRequest,
  CreateRunRequestSchema,
  type Run,
  RunSchema,
  type RunService,
} from "../../../gen/agentplane/agents/v1/run_service_pb.js";
import {
  type ServerSentEvent,
  ServerSentEventSchema,
} from "../../../gen/agentplane/api/v1/server_sent_event_pb.js";
import type { RunSettings, WebhookSettings } from "../../config.js";
import type { AgentRunPayload } from "../../jobs/agent-run-dispatch.js";
import type { LocalRuns } from "../../jobs/agent-run-job.js";
import type { JobDefinition } from "../../jobs/job-definition.js";
import type { Queue } from "../../jobs/queue.js";
import type { WebhookPayload } from "../../jobs/webhook-delivery-job.js";
import type { GraphRegistry } from "../../runtime/graph-registry.js";
import type { RunEventBus } from "../../runtime/run-event-bus.js";
import {
  type AgentRunRecord,
  deleteEndedRun,
  findRun,
  listRuns,
  type RunStatus,
  runIdsWithStatus,
} from "../../store/agents/agent-run-store.js";
import { threadExists } from "../../store/agents/agent-run-thread-store.js";
import { lastEventSeq } from "../../store/agents/run-event-store.js";
import { createThreadBatches } from "../../store/batching/thread-batches.js";
import type { Sql } from "../../store/db.js";
import { authorizeEvent, authorizeWorkspace, type Principal } from "../iam/principal.js";
import { queryList } from "../query-lists.js";
import { invalid, oneOf, requireUuid } from "../request-validation.js";
import { setRestSuccessStatus } from "../response-status.js";
import { callerOrigin, withFeedbackUrls } from "../tracing/feedback-tokens.js";
import { noteIgnoredFields, takeUnknownFields } from "../unknown-fields.js";
import { toValue } from "./json-value.js";
import { createRunAssistantCache } from "./run-assistant-cache.js";
import type { RunTarget } from "./run-authorization.js";
import { CANCELLED, cancelRunsInTx, type RunCancelDeps, takenReason } from "./run-cancel.js";
import { conflictsAs409 } from "./run-conflicts.js";
import { createRun, type RunCreationDeps } from "./run-creation.js";
import {
  parseCancelAction,
  parseFlag,
  parseQueryStreamModes,
  parseRunRequest,
  parseStreamNamespaces,
  RUN_STATUSES,
  type RunRequest,
} from "./run-requests.js";
import {
  eventFilter,
  hasEnded,
  outputOf,
  parseLastEventId,
  readRunStream,
  readThreadStream,
  seqAfterCheckpoint,
  waitForRunEnd,
} from "./run-streams.js";
import type { SystemAssistants } from "./system-assistants.js";
import { type ThreadEvent, threadNotFound } from "./thread-access.js";

/** Dependencies of {@link createRunService}. */
export interface RunServiceDeps {
  sql: Sql;
  graphs: GraphRegistry;
  systemAssistants: SystemAssistants;
  queue: () => Pick<Queue, "enqueue">;
  runJob: () => JobDefinition<AgentRunPayload>;
  bus: RunEventBus;
  settings: RunSettings;
  /** Webhook settings, to check a run's `webhook`; the defaults when absent. */
  webhooks?: WebhookSettings;
  /** The webhook job, which a pending run ended by a cancel owes; absent owes none. */
  webhookJob?: () => JobDefinition<WebhookPayload>;
  /** This process's run worker, when it executes runs: runs created here start here at once. */
  localRuns?: LocalRuns;
}

/** Default page size of the runs list, as in the LangGraph API. */
const DEFAULT_LIMIT = 10;
/** Largest page size of the runs list. */
const MAX_LIMIT = 1000;
/** Runs one bulk cancel by status touches at most; a larger backlog takes several calls. */
const MAX_BULK_CANCEL = 1000;
/** Largest stateless batch: each run is a transaction; bigger batches belong in several calls. */
const MAX_BATCH = 100;
/** The modes of a thread's stream: every run's events, runs' starts and ends, or values only. */
const THREAD_STREAM_MODES = ["run_modes", "lifecycle", "state_update"] as const;
/** Fields a runs list may `select`. */
const RUN_FIELDS = [
  "run_id",
  "thread_id",
  "assistant_id",
  "created_at",
  "updated_at",
  "status",
  "metadata",
  "kwargs",
  "multitask_strategy",
  "cancel_reason",
];

/**
 * One entry of a batch as a CreateRunRequest; the SDK's duplicate camelCase id is dropped, and
 * members no field knows are ignored (decision 14) and noted on the call for the REST layer.
 */
function batchEntry(value: Value, index: number, ctx: HandlerContext): CreateRunRequest {
  const json = toJson(ValueSchema, value);
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw invalid(`runs[${index}] must be a JSON object: a run's body`);
  const { assistantId, ...rest } = json;
  const body =
    "assistant_id" in rest
      ? rest
      : { ...rest, ...(assistantId === undefined ? {} : { assistant_id: assistantId }) };
  noteIgnoredFields(ctx, takeUnknownFields(CreateRunRequestSchema, body));
  try {
    return fromJson(CreateRunRequestSchema, body);
  } catch (error) {
    throw invalid(`runs[${index}]: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** A run as the API shows it; with `select`, only those fields. */
export function runView(run: AgentRunRecord, select?: ReadonlySet<string>): Run {
  const want = (field: string) => !select || select.has(field);
  const view = create(RunSchema);
  if (want("run_id")) view.runId = run.runId;
  if (want("thread_id")) view.threadId = run.threadId;
  if (want("assistant_id")) view.assistantId = run.assistantId;
  if (want("created_at")) view.createdAt = timestampFromDate(run.createdAt);
  if (want("updated_at")) view.updatedAt = timestampFromDate(run.updatedAt);
  if (want("status")) view.status = run.status;
  if (want("metadata")) view.metadata = run.metadata;
  if (want("kwargs")) view.kwargs = run.kwargs;
  if (want("multitask_strategy")) view.multitaskStrategy = run.multitaskStrategy;
  if (want("cancel_reason") && run.cancelReason !== null) view.cancelReason = run.cancelReason;
  return view;
}

function runNotFound(runId: string): ConnectError {
  return new ConnectError(`run ${runId} not found`, Code.NotFound);
}

/**
 * What creating and cancelling runs needs, from the run service's dependencies: shared by the run
 * service and the launcher of the A2A and MCP adapters, so both create, cancel and owe webhooks alike.
 */
export function runCreationDepsOf(deps: RunServiceDeps): RunCreationDeps {
  const cancel: RunCancelDeps = {
    bus: deps.bus,
    dispatch: { queue: deps.queue, runJob: deps.runJob },
    streamTtlSeconds: deps.settings.streamTtlSeconds,
    ...(deps.webhooks && deps.webhookJob
      ? { webhooks: { settings: deps.webhooks, job: deps.webhookJob } }
      : {}),
  };
  const graphIds = () => deps.graphs.ids();
  return {
    sql: deps.sql,
    systemAssistants: deps.systemAssistants,
    graphIds,
    assistants: createRunAssistantCache(deps.sql, { graphIds }),
    cancel,
    settings: deps.settings,
    configurableHeaders: deps.graphs.settings.http.configurableHeaders,
    localRuns: deps.localRuns,
    ...(deps.webhooks ? { webhooks: deps.webhooks } : {}),
  };
}

/** RunService: creating, streaming, waiting for, listing and cancelling runs. */
export function createRunService(deps: RunServiceDeps): ServiceImpl<typeof RunService> {
  const { sql, bus } = deps;
  const creationDeps = runCreationDepsOf(deps);
  const cancelDeps = creationDeps.cancel;
  const readers = { sql, bus };
  // Custom auth's thread checks, batched with the other lookups in flight like the thread service's.
  const threads = createThreadBatches(sql);

  /**
   * Creates the request's run; `awaited` when the caller answers only once the run has executed
   * or streamed (wait, stream), which lets a stateless run wait for a slot here (run-creation.ts).
   */
  const start = async (
    ctx: HandlerContext,
    threadId: string | undefined,
    request: RunRequest,
    awaited = false,
  ): Promise<{ workspaceId: string; run: AgentRunRecord; startedHere: boolean }> => {
    const { principal, workspace } = await authorizeWorkspace(ctx, "threads:write");
    const target: RunTarget = threadId === undefined ? { kind: "stateless" } : { kind: "thread", threadId };
    const { run, startedHere } = await conflictsAs409(() =>
      createRun(
        creationDeps,
        { workspaceId: workspace.id, target, request, headers: ctx.requestHeader },
        awaited ? { principal, awaitedUntil: ctx.signal } : { principal },
      ),
    );
    const base = threadId === undefined ? `/runs/${run.runId}` : `/threads/${run.threadId}/runs/${run.runId}`;
    ctx.responseHeader.set("Content-Location", base);
    return { workspaceId: workspace.id, run, startedHere };
  };

  const cancel = (
    workspaceId: string,
    runIds: string[],
    action: "interrupt" | "rollback",
    reason = CANCELLED,
  ) =>
    conflictsAs409(() =>
      sql.begin((tx) => cancelRunsInTx(tx, cancelDeps, workspaceId, runIds, action, reason)),
    );

  /**
   * Waits for the run (`createdHere`: by this request, so its end cannot have been announced before
   * the wait began); on a client that goes away, cancels it when asked to.
   */
  const awaitEnd = async (
    ctx: HandlerContext,
    workspaceId: string,
    run: AgentRunRecord,
    options: { cancelOnDisconnect: boolean; createdHere: boolean },
  ) => {
    const { cancelOnDisconnect, createdHere } = options;
    try {
      return await waitForRunEnd(readers, { workspaceId, runId: run.runId }, ctx.signal, {
        ...(createdHere ? { created: run } : {}),
      });
    } catch (error) {
      if (cancelOnDisconnect && ctx.signal.aborted)
        await cancel(workspaceId, [run.runId], "interrupt").catch(() => {});
      throw error;
    }
  };

  /** A wait or join's answer: the output, with `__feedback__` URLs for a run's `feedback_keys`. */
  const withFeedback = (ctx: HandlerContext, workspaceId: string, run: AgentRunRecord) =>
    withFeedbackUrls(
      sql,
      { workspaceId, runId: run.runId, origin: callerOrigin(ctx) },
      outputOf(run),
      run.kwargs.feedback_keys,
    );

  /**
   * A run stream with, before its `end`, the `feedback` event of a run with `feedback_keys`: each
   * key → a presigned feedback URL on the run (what `__feedback__` holds in a wait's answer).
   */
  async function* withFeedbackBeforeEnd(
    ctx: HandlerContext,
    workspaceId: string,
    run: AgentRunRecord,
    events: AsyncIterable<ServerSentEvent>,
  ): AsyncGenerator<ServerSentEvent> {
    for await (const event of events) {
      if (
        event.event === "end" &&
        Array.isArray(run.kwargs.feedback_keys) &&
        run.kwargs.feedback_keys.length > 0
      ) {
        const answer = await withFeedback(ctx, workspaceId, { ...run, output: {} });
        const urls =
          typeof answer === "object" && answer !== null && !Array.isArray(answer)
            ? answer.__feedback__
            : undefined;
        if (urls !== undefined)
          yield create(ServerSentEventSchema, { event: "feedback", data: fromJson(ValueSchema, urls) });
      }
      yield event;
    }
  }

  /**
   * Whether custom auth lets `principal` reach thread `threadId` for `event` (runs belong to their
   * thread: its filter decides); true for principals without handlers.
   */
  const threadVisible = async (
    principal: Principal,
    workspaceId: string,
    threadId: string,
    event: ThreadEvent,
  ): Promise<boolean> => {
    const auth = await authorizeEvent(principal, event, { thread_id: threadId });
    return !auth || (await threads.findVisible({ workspaceId, threadId }, auth)) !== undefined;
  };

  const loadRun = async (
    ctx: HandlerContext,
    event: "threads:read" | "threads:update",
    threadId: string | undefined,
    rawRunId: string,
  ) => {
    const { principal, workspace } = await authorizeWorkspace(
      ctx,
      event === "threads:read" ? "threads:read" : "threads:write",
    );
    const runId = requireUuid(rawRunId, "run_id");
    const tid = threadId === undefined ? undefined : requireUuid(threadId, "thread_id");
    const run = await findRun(sql, workspace.id, runId, tid);
    if (!run || !(await threadVisible(principal, workspace.id, run.threadId, event)))
      throw runNotFound(runId);
    return { workspaceId: workspace.id, run };
  };

  return {
    async createRun(request, ctx) {
      const { run } = await start(
        ctx,
        request.threadId,
        parseRunRequest(request, request.threadId === undefined),
      );
      return runView(run);
    },

    async *streamRun(request, ctx) {
      const parsed = parseRunRequest(request, request.threadId === undefined);
      const { workspaceId, run, startedHere } = await start(ctx, request.threadId, parsed, true);
      ctx.responseHeader.set(
        "Location",
        request.threadId === undefined
          ? `/runs/${run.runId}/stream`
          : `/threads/${run.threadId}/runs/${run.runId}/stream`,
      );
      // The SDK sends the namespaces to stream as query parameters of the POST whose body is the run.
      const namespaces = parseStreamNamespaces(new URL(ctx.url).searchParams.getAll("namespace"));
      let ended = false;
      try {
        yield* withFeedbackBeforeEnd(
          ctx,
          workspaceId,
          run,
          readRunStream(
            readers,
            { workspaceId, runId: run.runId },
            // Watched from the run's start when it started here: nothing to read before its events.
            {
              afterSeq: 0,
              accept: eventFilter(undefined, namespaces),
              signal: ctx.signal,
              watchedFromStart: startedHere,
              endEvent: true,
            },
          ),
        );
        ended = !ctx.signal.aborted;
      } finally {
        if (!ended && parsed.onDisconnect === "cancel")
          await cancel(workspaceId, [run.runId], "interrupt").catch(() => {});
      }
    },

    async waitRun(request, ctx) {
      const parsed = parseRunRequest(request, request.threadId === undefined);
      const { workspaceId, run } = await start(ctx, request.threadId, parsed, true);
      ctx.responseHeader.set(
        "Location",
        request.threadId === undefined
          ? `/runs/${run.runId}`
          : `/threads/${run.threadId}/runs/${run.runId}/join`,
      );
      const ended = await awaitEnd(ctx, workspaceId, run, {
        cancelOnDisconnect: parsed.onDisconnect === "cancel",
        createdHere: true,
      });
      return { output: toValue(await withFeedback(ctx, workspaceId, ended ?? run)) };
    },

    async createRunBatch(request, ctx) {
      if (request.runs.length === 0 || request.runs.length > MAX_BATCH)
        throw invalid(`a batch must hold 1 to ${MAX_BATCH} runs`);
      const parsed = request.runs.map((value, i) => {
        const r = batchEntry(value, i, ctx);
        if (r.threadId !== undefined)
          throw invalid(`runs[${i}]: batch runs are stateless; send no thread_id`);
        return parseRunRequest(r, true);
      });
      const runs: Run[] = [];
      for (const p of parsed) runs.push(runView((await start(ctx, undefined, p)).run));
      ctx.responseHeader.delete("Content-Location");
      return { runs };
    },

    async listRuns(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:read");
      const threadId = requireUuid(request.threadId, "thread_id");
      const limit = request.limit ?? DEFAULT_LIMIT;
      if (limit < 1 || limit > MAX_LIMIT) throw invalid(`limit must be from 1 to ${MAX_LIMIT}, got ${limit}`);
      const offset = request.offset ?? 0;
      if (offset < 0) throw invalid(`offset must be 0 or more, got ${offset}`);
      const status = request.status === undefined ? undefined : oneOf(request.status, RUN_STATUSES, "status");
      const fields = queryList(request.select, "select");
      for (const field of fields)
        if (!RUN_FIELDS.includes(field))
          throw invalid(`select: unknown field ${JSON.stringify(field)}; fields: ${RUN_FIELDS.join(", ")}`);
      if (
        !(await threadExists(sql, workspace.id, threadId)) ||
        !(await threadVisible(principal, workspace.id, threadId, "threads:read"))
      )
        throw threadNotFound(threadId);
      const runs = await listRuns(sql, workspace.id, threadId, {
        limit,
        offset,
        ...(status ? { status } : {}),
      });
      const select = fields.length > 0 ? new Set(fields) : undefined;
      return { runs: runs.map((run) => runView(run, select)) };
    },

    async getRun(request, ctx) {
      const { run } = await loadRun(ctx, "threads:read", request.threadId, request.runId);
      return runView(run);
    },

    async deleteRun(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:write");
      const threadId = requireUuid(request.threadId, "thread_id");
      const runId = requireUuid(request.runId, "run_id");
      if (!(await threadVisible(principal, workspace.id, threadId, "threads:delete")))
        throw runNotFound(runId);
      const outcome = await deleteEndedRun(sql, workspace.id, threadId, runId);
      if (outcome === "missing") throw runNotFound(runId);
      if (outcome === "active")
        throw new ConnectError(
          `run ${runId} is still pending or running: cancel it before deleting it`,
          Code.FailedPrecondition,
        );
      return {};
    },

    async cancelRun(request, ctx) {
      const wait = parseFlag(request.wait, "wait");
      const action = parseCancelAction(request.action);
      const reason = request.reason === undefined || request.reason === "" ? undefined : request.reason;
      if (reason !== undefined && reason !== "taken")
        throw invalid(
          `reason must be "taken" (the run's input was absorbed for steering); got ${JSON.stringify(reason)}`,
        );
      if (reason === "taken" && action !== "interrupt")
        throw invalid(
          'reason "taken" goes with action interrupt: a rolled-back run is gone, with nothing to record',
        );
      const { workspaceId, run } = await loadRun(ctx, "threads:update", request.threadId, request.runId);
      const outcomes = await cancel(
        workspaceId,
        [run.runId],
        action,
        reason ? takenReason(new Date()) : CANCELLED,
      );
      if (outcomes.length === 0)
        throw new ConnectError(
          `run ${run.runId} has already ended (${(await findRun(sql, workspaceId, run.runId))?.status ?? "deleted"}): there is nothing to cancel`,
          Code.FailedPrecondition,
        );
      if (wait) await waitForRunEnd(readers, { workspaceId, runId: run.runId }, ctx.signal);
      else setRestSuccessStatus(ctx, 202);
      return {};
    },

    async cancelRuns(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:write");
      const action = parseCancelAction(request.action);
      const filter = request.filter;
      const byIds = filter?.threadId !== undefined || (filter?.runIds.length ?? 0) > 0;
      if (byIds === (filter?.status !== undefined))
        throw invalid("send either thread_id with run_ids, or status (pending, running or all), not both");
      let runIds: string[];
      if (byIds) {
        if (filter?.threadId === undefined || filter.runIds.length === 0)
          throw invalid("thread_id and run_ids go together: the runs of that thread to cancel");
        const threadId = requireUuid(filter.threadId, "thread_id");
        const ids = filter.runIds.map((id, i) => requireUuid(id, `run_ids[${i}]`));
        if (!(await threadVisible(principal, workspace.id, threadId, "threads:update")))
          throw threadNotFound(threadId);
        const found = await Promise.all(ids.map((id) => findRun(sql, workspace.id, id, threadId)));
        const missing = ids.filter((_, i) => !found[i]);
        if (missing.length > 0)
          throw new ConnectError(
            `runs not found on thread ${threadId}: ${missing.join(", ")}`,
            Code.NotFound,
          );
        runIds = ids;
      } else {
        const status = oneOf(filter?.status, ["pending", "running", "all"] as const, "status");
        const statuses: RunStatus[] = status === "all" ? ["pending", "running"] : [status];
        const auth = await authorizeEvent(principal, "threads:update", { status });
        runIds = await runIdsWithStatus(sql, workspace.id, statuses, MAX_BULK_CANCEL, auth);
      }
      await cancel(workspace.id, runIds, action);
      return {};
    },

    async joinRun(request, ctx) {
      const cancelOnDisconnect = parseFlag(request.cancelOnDisconnect, "cancel_on_disconnect");
      const { workspaceId, run } = await loadRun(ctx, "threads:read", request.threadId, request.runId);
      const ended = hasEnded(run)
        ? run
        : await awaitEnd(ctx, workspaceId, run, { cancelOnDisconnect, createdHere: false });
      return { output: toValue(await withFeedback(ctx, workspaceId, ended ?? run)) };
    },

    async *joinRunStream(request, ctx) {
      const cancelOnDisconnect = parseFlag(request.cancelOnDisconnect, "cancel_on_disconnect");
      const modes = parseQueryStreamModes(request.streamMode);
      const lastEventId = parseLastEventId(ctx.requestHeader.get("last-event-id") ?? request.lastEventId);
      const { workspaceId, run } = await loadRun(ctx, "threads:read", request.threadId, request.runId);
      // Without Last-Event-ID a join sees what happens from now on: an ended run has only its end.
      if (lastEventId === undefined && hasEnded(run)) {
        yield create(ServerSentEventSchema, {
          event: "end",
          data: fromJson(ValueSchema, { run_id: run.runId, status: run.status }),
        });
        return;
      }
      const checkpointId = request.checkpointId === "" ? undefined : request.checkpointId;
      // A replay that starts from a checkpoint the client shows skips what led up to it.
      const fromCheckpoint =
        checkpointId !== undefined && lastEventId !== undefined
          ? await seqAfterCheckpoint(sql, { workspaceId, runId: run.runId }, checkpointId)
          : undefined;
      const afterSeq =
        lastEventId === undefined
          ? await lastEventSeq(sql, workspaceId, { runId: run.runId })
          : Math.max(lastEventId, fromCheckpoint ?? 0);
      let ended = false;
      try {
        yield* withFeedbackBeforeEnd(
          ctx,
          workspaceId,
          run,
          readRunStream(
            readers,
            { workspaceId, runId: run.runId },
            {
              afterSeq,
              accept: eventFilter(modes, parseStreamNamespaces(request.namespace)),
              signal: ctx.signal,
              endEvent: true,
            },
          ),
        );
        ended = !ctx.signal.aborted;
      } finally {
        if (!ended && cancelOnDisconnect) await cancel(workspaceId, [run.runId], "interrupt").catch(() => {});
      }
    },

    async *joinThreadStream(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "threads:read");
      const threadId = requireUuid(request.threadId, "thread_id");
      if (
        !(await threadExists(sql, workspace.id, threadId)) ||
        !(await threadVisible(principal, workspace.id, threadId, "threads:read"))
      )
        throw threadNotFound(threadId);
      // Several modes at once send what any of them would.
      const kinds = queryList(request.streamMode, "stream_mode").map((mode) =>
        oneOf(mode, THREAD_STREAM_MODES, "stream_mode"),
      );
      const modes = new Set(kinds.length > 0 ? kinds : ["run_modes"]);
      const accept = (event: string) =>
        modes.has("run_modes") ||
        (modes.has("lifecycle") && (event === "metadata" || event === "error")) ||
        (modes.has("state_update") && (event === "values" || event.startsWith("values|")));
      const lastEventId = parseLastEventId(ctx.requestHeader.get("last-event-id") ?? request.lastEventId);
      const afterSeq = lastEventId ?? (await lastEventSeq(sql, workspace.id, { threadId }));
      yield* readThreadStream(
        readers,
        { workspaceId: workspace.id, threadId },
        { afterSeq, accept, signal: ctx.signal },
      );
    },
  };
}
