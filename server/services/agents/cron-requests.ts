import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { fromJson, toJson } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import type {
  CreateCronRequest,
  UpdateCronRequest,
} from "../../../gen/agentplane/agents/v1/cron_service_pb.js";
import {
  type CreateRunRequest,
  CreateRunRequestSchema,
} from "../../../gen/agentplane/agents/v1/run_service_pb.js";
import { nextFireTime, ScheduleError } from "../../jobs/cron-schedule.js";
import type { CronRecord } from "../../store/agents/agent-cron-store.js";
import { invalid, oneOf } from "../request-validation.js";
import { parseRunRequest, type RunRequest } from "./run-requests.js";

/**
 * The run-create fields a cron carries into each run, by their proto (JSON body) names. The cron's
 * own fields (schedule, timezone, end_time, enabled, on_run_completed) stay on the cron.
 */
const RUN_FIELDS = [
  "input",
  "config",
  "context",
  "metadata",
  "webhook",
  "interrupt_before",
  "interrupt_after",
  "multitask_strategy",
  "stream_mode",
  "stream_subgraphs",
  "stream_resumable",
  "durability",
  "checkpoint_during",
] as const;

/** A cron's schedule settings, validated. */
export interface CronTiming {
  schedule: string;
  timezone: string | null;
  endTime: Date | null;
}

/** The JSON of a Value field; undefined when absent, null when JSON null. */
function json(value: Value | undefined): JsonValue | undefined {
  return value === undefined ? undefined : toJson(ValueSchema, value);
}

/** A nullable string field: undefined when absent, null when null. */
function nullableText(value: Value | undefined, field: string): string | null | undefined {
  const out = json(value);
  if (out === undefined || out === null) return out;
  if (typeof out !== "string") throw invalid(`${field} must be a string or null`);
  return out;
}

/** An ISO 8601 time in the future, or null; undefined when absent. */
function parseEndTime(value: Value | undefined, now: Date): Date | null | undefined {
  const raw = nullableText(value, "end_time");
  if (raw === undefined || raw === null) return raw;
  const time = new Date(raw);
  if (Number.isNaN(time.getTime()) || !/^\d{4}-\d{2}-\d{2}T/.test(raw))
    throw invalid(`end_time ${JSON.stringify(raw)} is not an ISO 8601 date-time (e.g. 2030-01-31T12:00:00Z)`);
  if (time.getTime() <= now.getTime())
    throw invalid(`end_time ${raw} is in the past: send a time after ${now.toISOString()}, or none`);
  return time;
}

/** When a cron with `timing` fires first after `now` (null: not before its end time). */
export function firstFireTime(timing: CronTiming, now: Date): Date | null {
  try {
    return nextFireTime(timing.schedule, timing.timezone, now, timing.endTime);
  } catch (error) {
    if (error instanceof ScheduleError) throw invalid(error.message);
    throw error;
  }
}

/** The run payload's fields of `request` as JSON, by proto name; absent fields are left out. */
function runFieldsOf(request: CreateCronRequest | UpdateCronRequest): JsonObject {
  const create = request.$typeName === "agentplane.agents.v1.CreateCronRequest" ? request : undefined;
  const out: JsonObject = {};
  const fields: Record<(typeof RUN_FIELDS)[number], JsonValue | undefined> = {
    input: json(request.input),
    config: json(request.config),
    context: json(request.context),
    metadata: json(request.metadata),
    webhook: json(request.webhook),
    interrupt_before: json(request.interruptBefore),
    interrupt_after: json(request.interruptAfter),
    multitask_strategy: create ? json(create.multitaskStrategy) : undefined,
    stream_mode: json(request.streamMode),
    stream_subgraphs: request.streamSubgraphs,
    stream_resumable: request.streamResumable,
    durability: json(request.durability),
    checkpoint_during: create ? json(create.checkpointDuring) : undefined,
  };
  for (const field of RUN_FIELDS) {
    const value = fields[field];
    if (value !== undefined && value !== null) out[field] = value;
  }
  return out;
}

/** The CreateRunRequest a cron's payload describes, for a run on `threadId` (stateless when null). */
export function runRequestOf(cron: Pick<CronRecord, "payload" | "threadId">): CreateRunRequest {
  let request: CreateRunRequest;
  try {
    request = fromJson(CreateRunRequestSchema, cron.payload);
  } catch (error) {
    throw invalid(`the cron's run payload is not a run create: ${(error as Error).message}`);
  }
  return cron.threadId === null ? request : { ...request, threadId: cron.threadId };
}

/**
 * Validates a payload as the run create each firing makes (the same checks as a run create), so a
 * cron that would make bad runs is refused when created or updated, not when it fires.
 */
export function validatePayload(payload: JsonObject, stateless: boolean): RunRequest {
  return parseRunRequest(runRequestOf({ payload, threadId: null }), stateless);
}

/** What a new cron is made of, validated. */
export interface NewCronInput {
  timing: CronTiming;
  enabled: boolean;
  onRunCompleted: "delete" | "keep" | null;
  /** The run create body, with `assistant_id` still as sent (resolved by the service). */
  payload: JsonObject;
  metadata: JsonObject;
  nextRunDate: Date | null;
}

/** Validates a create request (`stateless` when it has no thread) at time `now`. */
export function parseCreateCron(request: CreateCronRequest, stateless: boolean, now: Date): NewCronInput {
  if (request.schedule.trim() === "")
    throw invalid('schedule is required: a 5-field cron expression such as "*/5 * * * *"');
  const timezone = nullableText(request.timezone, "timezone") ?? null;
  const timing: CronTiming = {
    schedule: request.schedule.trim(),
    timezone,
    endTime: parseEndTime(request.endTime, now) ?? null,
  };
  const completedRaw = nullableText(request.onRunCompleted, "on_run_completed");
  if (!stateless && completedRaw !== undefined && completedRaw !== null)
    throw invalid(
      "on_run_completed applies to stateless crons (POST /runs/crons): a thread cron keeps its thread",
    );
  const onRunCompleted = stateless
    ? oneOf(completedRaw ?? undefined, ["delete", "keep"] as const, "on_run_completed", "delete")
    : null;
  const payload: JsonObject = { assistant_id: request.assistantId, ...runFieldsOf(request) };
  const run = validatePayload(payload, stateless);
  return {
    timing,
    enabled: request.enabled ?? true,
    onRunCompleted,
    payload,
    metadata: run.metadata,
    nextRunDate: firstFireTime(timing, now),
  };
}

/** A cron with an update request applied, validated; `now` decides what is past. */
export function applyCronUpdate(
  cron: CronRecord,
  request: UpdateCronRequest,
  now: Date,
): Omit<
  CronRecord,
  | "workspaceId"
  | "cronId"
  | "assistantId"
  | "threadId"
  | "userId"
  | "createdAt"
  | "updatedAt"
  | "encryptionContext"
  | "creator"
> {
  const stateless = cron.threadId === null;
  const timezone = nullableText(request.timezone, "timezone");
  const endTime = parseEndTime(request.endTime, now);
  const timing: CronTiming = {
    schedule: request.schedule === undefined ? cron.schedule : request.schedule.trim(),
    timezone: timezone === undefined ? cron.timezone : timezone,
    endTime: endTime === undefined ? cron.endTime : endTime,
  };
  const completedRaw = nullableText(request.onRunCompleted, "on_run_completed");
  if (!stateless && completedRaw !== undefined && completedRaw !== null)
    throw invalid("on_run_completed applies to stateless crons only: a thread cron keeps its thread");
  const onRunCompleted = stateless
    ? oneOf(completedRaw ?? cron.onRunCompleted ?? undefined, ["delete", "keep"] as const, "on_run_completed")
    : null;
  const payload: JsonObject = { ...cron.payload, ...runFieldsOf(request) };
  const run = validatePayload(payload, stateless);
  const enabled = request.enabled ?? cron.enabled;
  // A changed schedule, time zone or end time, or a cron switched back on, counts from now: the time
  // it spent off is not caught up.
  const retimed =
    timing.schedule !== cron.schedule ||
    timing.timezone !== cron.timezone ||
    timing.endTime?.getTime() !== cron.endTime?.getTime() ||
    (enabled && !cron.enabled);
  return {
    schedule: timing.schedule,
    timezone: timing.timezone,
    endTime: timing.endTime,
    enabled,
    onRunCompleted,
    payload,
    metadata: request.metadata === undefined ? cron.metadata : run.metadata,
    nextRunDate: retimed ? firstFireTime(timing, now) : cron.nextRunDate,
  };
}
