/**
 * Turns runs as the LangSmith SDKs send them (`runs.Run`, snake_case JSON) into the rows of the
 * `runs` table: validated, with timestamps normalised and the derived fields (trace_id,
 * parent_run_ids, is_root, tokens, costs, first_token_time) filled in. Pure: no I/O.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../ids.js";
import type {
  JsonObject,
  NormalizedFeedback,
  NormalizedRun,
  ProjectRef,
} from "../store/tracing/trace-rows.js";
import { projectOfAddress } from "./agent-address.js";
import { DottedOrderError, parseDottedOrder, rootDottedOrder } from "./dotted-order.js";
import { normalizeTimestamp } from "./timestamp.js";

/**
 * A run as clients send it (LangSmith `runs.Run`). Every field is optional on the wire; unknown
 * fields (`child_runs`, `revision_id`, `attachments`, ...) are ignored.
 */
export interface RunInput {
  id?: string;
  trace_id?: string;
  dotted_order?: string;
  parent_run_id?: string | null;
  session_id?: string | null;
  session_name?: string | null;
  name?: string;
  run_type?: string;
  /** ISO 8601 string or epoch milliseconds. */
  start_time?: string | number;
  /** ISO 8601 string or epoch milliseconds. */
  end_time?: string | number | null;
  error?: string | null;
  inputs?: JsonObject | null;
  outputs?: JsonObject | null;
  extra?: JsonObject | null;
  serialized?: JsonObject | null;
  /** `{name, time, kwargs?}` items; the first `new_token` event gives first_token_time. */
  events?: JsonObject[] | null;
  tags?: string[] | null;
  reference_example_id?: string | null;
  trace_tier?: string | null;
  /** `lrn:agents/{id}/environments/{env}`: the agent project of a run that names no project. */
  address?: string | null;
  [field: string]: unknown;
}

/**
 * A feedback item (multipart `feedback.<id>` part, or the feedback API's create). Unknown fields are
 * ignored.
 */
export interface FeedbackInput {
  id?: string;
  /** The run; absent or null: the root run of `trace_id`. */
  run_id?: string | null;
  trace_id?: string | null;
  key?: string;
  /** A number; booleans count as 1 and 0. */
  score?: number | boolean | null;
  value?: unknown;
  comment?: string | null;
  /** The corrected output: any JSON value. */
  correction?: unknown;
  /** `{type, metadata}`: who gave the feedback. */
  feedback_source?: unknown;
  /** The run's tracing project. */
  session_id?: string | null;
  [field: string]: unknown;
}

/** The run types LangSmith accepts. */
export const RUN_TYPES = ["tool", "chain", "llm", "retriever", "embedding", "prompt", "parser"] as const;

/** The project of a run that names none, as in LangSmith (and the SDK's LANGSMITH_PROJECT default). */
export const DEFAULT_PROJECT_NAME = "default";

/** Longest project name accepted: LangSmith's UI and URLs never need more. */
export const MAX_PROJECT_NAME = 500;

/**
 * Validates one run. A post must name its run (`name`, `run_type`); a patch carries only what
 * changed. `now` is the start time of a root run that sends neither start_time nor dotted_order.
 * Throws INVALID_ARGUMENT naming the run and the rule it breaks.
 */
export function normalizeRun(raw: unknown, kind: "post" | "patch", now: Date = new Date()): NormalizedRun {
  if (!isObject(raw)) throw invalid(`each ${kind} item must be a JSON object`);
  const run = raw as RunInput;
  if (typeof run.id !== "string" || !isUuid(run.id))
    throw invalid(`every ${kind} run needs an "id" that is a UUID, got ${JSON.stringify(run.id ?? null)}`);
  const id = run.id.toLowerCase();
  const fail = failureOf(`run ${id}`);

  const traceId = optionalUuid(run.trace_id, "trace_id", fail);
  let parentRunId = optionalUuid(run.parent_run_id, "parent_run_id", fail);
  const dottedOrder = optionalString(run.dotted_order, "dotted_order", fail);
  if (kind === "patch" && parentRunId === undefined && dottedOrder !== undefined) {
    // Patches may leave parent_run_id out: the dotted_order already says where the run sits.
    const runIds = dottedOrder.split(".").map((segment) => segment.slice(segment.lastIndexOf("Z") + 1));
    parentRunId = runIds.length > 1 ? runIds[runIds.length - 2] : undefined;
  }

  const name = optionalString(run.name, "name", fail) ?? null;
  const runType = optionalString(run.run_type, "run_type", fail) ?? null;
  if (kind === "post" && !name) throw fail('"name" is required when creating a run');
  if (kind === "post" && runType === null)
    throw fail(`"run_type" is required: one of ${RUN_TYPES.join(", ")}`);
  if (runType !== null && !(RUN_TYPES as readonly string[]).includes(runType))
    throw fail(`run_type must be one of ${RUN_TYPES.join(", ")}, got "${runType}"`);

  const startTime = optionalTime(run.start_time, "start_time", fail);
  const endTime = optionalTime(run.end_time, "end_time", fail) ?? null;

  let parsed: ReturnType<typeof parseDottedOrder> | undefined;
  if (dottedOrder !== undefined) {
    try {
      parsed = parseDottedOrder(dottedOrder, { id, traceId, parentRunId });
    } catch (error) {
      if (error instanceof DottedOrderError) throw fail(error.message);
      throw error;
    }
  } else if (parentRunId !== undefined) {
    throw fail("dotted_order is required for child runs (runs with a parent_run_id)");
  } else if (traceId !== undefined && traceId !== id) {
    throw fail(`a root run's trace_id must be its own id, got trace_id ${traceId}`);
  }
  const start = startTime ?? parsed?.startTime ?? normalizeOrThrow(now.getTime(), fail);
  const extra = optionalObject(run.extra, "extra", fail);
  if (extra && extra.metadata !== undefined && extra.metadata !== null && !isObject(extra.metadata))
    throw fail("extra.metadata must be a JSON object");
  const outputs = optionalObject(run.outputs, "outputs", fail);
  const events = optionalEvents(run.events, fail);
  const usage = usageOf(outputs, extra);

  return {
    id,
    project: projectOf(run, fail),
    traceId: parsed?.traceId ?? id,
    parentRunId: parsed?.parentRunId ?? null,
    parentRunIds: parsed?.parentRunIds ?? [],
    referenceExampleId: optionalUuid(run.reference_example_id, "reference_example_id", fail) ?? null,
    name,
    runType,
    startTime: start,
    endTime,
    isRoot: (parsed?.parentRunId ?? null) === null,
    dottedOrder: dottedOrder ?? rootDottedOrder(start, id),
    positioned: kind === "post" || dottedOrder !== undefined,
    traceTier: optionalString(run.trace_tier, "trace_tier", fail) ?? null,
    inputs: optionalObject(run.inputs, "inputs", fail),
    outputs,
    error: optionalErrorText(run.error, fail),
    extra,
    events,
    serialized: optionalObject(run.serialized, "serialized", fail),
    tags: optionalTags(run.tags, fail),
    ...usage,
    firstTokenTime: firstTokenTime(events, fail),
  };
}

/** Validates one feedback item; throws INVALID_ARGUMENT naming the feedback and the rule. */
export function normalizeFeedback(raw: unknown): NormalizedFeedback {
  if (!isObject(raw)) throw invalid("each feedback item must be a JSON object");
  const item = raw as FeedbackInput;
  if (typeof item.id !== "string" || !isUuid(item.id))
    throw invalid(`every feedback item needs an "id" that is a UUID, got ${JSON.stringify(item.id ?? null)}`);
  const fail = failureOf(`feedback ${item.id}`);
  const traceId = optionalUuid(item.trace_id, "trace_id", fail) ?? null;
  // Feedback on a trace is feedback on its root run, whose id is the trace id.
  const runId = optionalUuid(item.run_id, "run_id", fail) ?? traceId;
  if (runId === null)
    throw fail('"run_id" or "trace_id" is required (project-level feedback is not supported)');
  const key = optionalString(item.key, "key", fail);
  if (!key) throw fail('"key" is required');
  if (key.length > MAX_FEEDBACK_KEY) throw fail(`key is longer than ${MAX_FEEDBACK_KEY} characters`);
  const source = item.feedback_source;
  if (source !== undefined && source !== null && !isObject(source))
    throw fail('feedback_source must be an object such as {"type": "api", "metadata": {}}');
  return {
    id: item.id.toLowerCase(),
    runId,
    traceId,
    key,
    score: feedbackScore(item.score, fail),
    value: item.value ?? null,
    comment: optionalString(item.comment, "comment", fail) ?? null,
    correction: item.correction ?? null,
    feedbackSource: source ?? null,
    sessionId: optionalUuid(item.session_id, "session_id", fail) ?? null,
  };
}

/** Longest feedback key: far beyond any metric name, short enough to index and show. */
const MAX_FEEDBACK_KEY = 1_000;

/** A feedback score as stored: a finite number, booleans as 1 and 0, or null. */
export function feedbackScore(score: unknown, fail: (rule: string) => ConnectError): number | null {
  if (typeof score === "boolean") return score ? 1 : 0;
  if (typeof score === "number" && Number.isFinite(score)) return score;
  if (score === undefined || score === null) return null;
  throw fail("score must be a number or a boolean");
}

type Fail = (rule: string) => ConnectError;

/**
 * The failure of one item: INVALID_ARGUMENT naming `subject` and the rule. Returned unnamed: the
 * server runs under tsx, whose transform gives a closure bound to a name that name at each creation
 * (a property definition per run).
 */
function failureOf(subject: string): Fail {
  return (rule) => invalid(`${subject}: ${rule}`);
}

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function optionalString(value: unknown, field: string, fail: Fail): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw fail(`${field} must be a string`);
  return value;
}

function optionalUuid(value: unknown, field: string, fail: Fail): string | undefined {
  const text = optionalString(value, field, fail);
  if (text === undefined) return undefined;
  if (!isUuid(text)) throw fail(`${field} must be a UUID, got "${text}"`);
  return text.toLowerCase();
}

function optionalTime(value: unknown, field: string, fail: Fail): string | undefined {
  if (value === undefined || value === null) return undefined;
  return normalizeOrThrow(value, fail, field);
}

function normalizeOrThrow(value: unknown, fail: Fail, field = "start_time"): string {
  const result = normalizeTimestamp(value, field);
  if ("error" in result) throw fail(result.error);
  return result.iso;
}

function optionalObject(value: unknown, field: string, fail: Fail): JsonObject | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) throw fail(`${field} must be a JSON object`);
  return value;
}

function optionalErrorText(value: unknown, fail: Fail): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === "string") return value;
  throw fail("error must be a string");
}

function optionalEvents(value: unknown, fail: Fail): JsonObject[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || !value.every(isObject)) throw fail("events must be an array of JSON objects");
  return value;
}

function optionalTags(value: unknown, fail: Fail): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((tag) => typeof tag === "string"))
    throw fail("tags must be an array of strings");
  return value;
}

function projectOf(run: RunInput, fail: Fail): ProjectRef {
  const id = optionalUuid(run.session_id, "session_id", fail);
  if (id !== undefined) return { id };
  const name = optionalString(run.session_name, "session_name", fail)?.trim();
  if (name !== undefined && name.length > MAX_PROJECT_NAME)
    throw fail(`session_name must be at most ${MAX_PROJECT_NAME} characters`);
  if (name) return { name };
  // A run sent to an agent names its address instead of a project (langsmith 0.12).
  const address = optionalString(run.address, "address", fail);
  if (address !== undefined) {
    const project = projectOfAddress(address);
    if ("error" in project) throw fail(project.error);
    return project;
  }
  return { name: DEFAULT_PROJECT_NAME };
}

/** The time of the first `new_token` event: when a streamed LLM run produced its first token. */
function firstTokenTime(events: JsonObject[] | null, fail: Fail): string | null {
  const first = events?.find((event) => event.name === "new_token");
  if (first?.time === undefined || first.time === null) return null;
  return normalizeOrThrow(first.time, fail, "events[new_token].time");
}

type Usage = Pick<
  NormalizedRun,
  "totalTokens" | "promptTokens" | "completionTokens" | "totalCost" | "promptCost" | "completionCost"
>;

/**
 * Token counts and costs. LangChain's `usage_metadata` (`input_tokens`, `output_tokens`,
 * `total_tokens`, optional `input_cost`, `output_cost`, `total_cost`) sits in `outputs` or, where
 * the JS `traceable` copies it, in `extra.metadata`; older LangChain LLM runs report
 * `outputs.llm_output.token_usage` (`prompt_tokens`, ...) or its camelCase `tokenUsage`.
 */
function usageOf(outputs: JsonObject | null, extra: JsonObject | null): Usage {
  const metadata = isObject(extra?.metadata) ? extra.metadata : undefined;
  const usage = pickObject(outputs?.usage_metadata) ?? pickObject(metadata?.usage_metadata);
  const llmOutput = pickObject(outputs?.llm_output);
  const legacy = pickObject(llmOutput?.token_usage) ?? pickObject(llmOutput?.tokenUsage);
  const prompt = count(usage?.input_tokens) ?? count(legacy?.prompt_tokens) ?? count(legacy?.promptTokens);
  const completion =
    count(usage?.output_tokens) ?? count(legacy?.completion_tokens) ?? count(legacy?.completionTokens);
  const total =
    count(usage?.total_tokens) ??
    count(legacy?.total_tokens) ??
    count(legacy?.totalTokens) ??
    (prompt === null && completion === null ? null : (prompt ?? 0) + (completion ?? 0));
  const promptCost = cost(usage?.input_cost);
  const completionCost = cost(usage?.output_cost);
  const totalCost =
    cost(usage?.total_cost) ??
    (promptCost === null && completionCost === null
      ? null
      : String(Number(promptCost ?? 0) + Number(completionCost ?? 0)));
  return {
    totalTokens: total,
    promptTokens: prompt,
    completionTokens: completion,
    totalCost,
    promptCost,
    completionCost,
  };
}

function pickObject(value: unknown): JsonObject | undefined {
  return isObject(value) ? value : undefined;
}

function count(value: unknown): number | null {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : null;
}

function cost(value: unknown): string | null {
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "string" && /^-?\d+(\.\d+)?(e-?\d+)?$/i.test(value)) return value;
  return null;
}
