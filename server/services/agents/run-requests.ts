import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { toJson } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import type { CreateRunRequest } from "../../../gen/agentplane/agents/v1/run_service_pb.js";
import { isLoopbackWebhook, loopbackPathProblem, MAX_WEBHOOK_LENGTH } from "../../net/webhook-url-policy.js";
import type { RunCommand } from "../../runtime/run-kwargs.js";
import { STREAM_MODES, type StreamMode } from "../../runtime/run-stream-modes.js";
import type { CancelAction, MultitaskStrategy, RunStatus } from "../../store/agents/agent-run-store.js";
import { queryList } from "../query-lists.js";
import { invalid, oneOf } from "../request-validation.js";

/** A run-creating request, validated. */
export interface RunRequest {
  /** A UUID or a graph id, as sent. */
  assistantId: string;
  input: JsonValue;
  command: RunCommand | null;
  config: JsonObject;
  context: JsonObject;
  metadata: JsonObject;
  streamModes: StreamMode[];
  subgraphs: boolean;
  resumable: boolean;
  interruptBefore: "*" | string[] | null;
  interruptAfter: "*" | string[] | null;
  /** The checkpoint id to start from, with its namespace and (if given) its thread. */
  checkpoint: { checkpoint_id: string; checkpoint_ns: string; thread_id?: string } | null;
  webhook: string | null;
  multitaskStrategy: MultitaskStrategy;
  ifNotExists: "create" | "reject";
  onCompletion: "delete" | "keep";
  onDisconnect: "cancel" | "continue";
  afterSeconds: number;
  durability: "sync" | "async" | "exit" | null;
  feedbackKeys: string[] | null;
  langsmithTracer: JsonObject | null;
  /**
   * A run of the thread-centric streaming protocol (the ids of the interrupts it answers, when it
   * resumes some); absent for runs of the run endpoints.
   */
  protocol?: { answers: string[] };
  /** Refuse the resume when an interrupt it answers by id is not waiting (it fails, running nothing). */
  strictResume?: boolean;
}

const STRATEGIES: readonly MultitaskStrategy[] = ["reject", "interrupt", "rollback", "enqueue"];
/** Longest delay accepted: a week; a run scheduled further out belongs to a cron. */
const MAX_AFTER_SECONDS = 7 * 24 * 3600;

/**
 * Keys a serialised `Command` object carries besides its fields (RemoteGraph sends the object as it
 * is): its class marker and the target graph, which is always the remote graph here. Ignored.
 */
const SERIALIZED_COMMAND_KEYS = new Set(["lg_name", "graph", "lc_direct_tool_output"]);

/** The JSON of a Value field; undefined when absent or null. */
function json(value: Value | undefined): Exclude<JsonValue, null> | undefined {
  if (value === undefined) return undefined;
  const out = toJson(ValueSchema, value);
  return out === null ? undefined : (out as Exclude<JsonValue, null>);
}

function object(value: Value | undefined, field: string): JsonObject | undefined {
  const out = json(value);
  if (out === undefined) return undefined;
  if (typeof out !== "object" || Array.isArray(out)) throw invalid(`${field} must be a JSON object`);
  return out;
}

function text(value: Value | undefined, field: string): string | undefined {
  const out = json(value);
  if (out === undefined) return undefined;
  if (typeof out !== "string") throw invalid(`${field} must be a string`);
  return out;
}

function flag(value: Value | undefined, field: string): boolean | undefined {
  const out = json(value);
  if (out === undefined) return undefined;
  if (typeof out !== "boolean") throw invalid(`${field} must be true or false`);
  return out;
}

/** Stream modes from one mode or a list; every entry must be a known mode. */
export function parseStreamModes(raw: JsonValue | undefined, field = "stream_mode"): StreamMode[] {
  if (raw === undefined) return ["values"];
  const list = Array.isArray(raw) ? raw : [raw];
  const modes: StreamMode[] = [];
  for (const mode of list) {
    if (typeof mode !== "string" || !(STREAM_MODES as readonly string[]).includes(mode))
      throw invalid(
        `${field} must be one of ${STREAM_MODES.join(", ")} (or a list of them); got ${JSON.stringify(mode)}`,
      );
    if (!modes.includes(mode as StreamMode)) modes.push(mode as StreamMode);
  }
  return modes.length > 0 ? modes : ["values"];
}

/** Stream modes from a query parameter: repeated, or one JSON array. */
export function parseQueryStreamModes(raw: readonly string[]): StreamMode[] | undefined {
  if (raw.length === 0) return undefined;
  return parseStreamModes(queryList(raw, "stream_mode"));
}

function nodeList(value: Value | undefined, field: string): "*" | string[] | null {
  const out = json(value);
  if (out === undefined) return null;
  if (out === "*") return "*";
  if (Array.isArray(out) && out.every((n) => typeof n === "string")) return out as string[];
  throw invalid(`${field} must be "*" or a list of node names`);
}

function parseCommand(value: Value | undefined): RunCommand | null {
  const out = json(value);
  if (out === undefined) return null;
  if (typeof out !== "object" || Array.isArray(out))
    throw invalid("command must be an object with resume, update and/or goto");
  const unknown = Object.keys(out).filter(
    (k) => !["resume", "update", "goto"].includes(k) && !SERIALIZED_COMMAND_KEYS.has(k),
  );
  if (unknown.length > 0)
    throw invalid(`command has unknown fields ${unknown.join(", ")}: it takes resume, update and goto`);
  const command: RunCommand = {};
  if (out.resume !== undefined && out.resume !== null) command.resume = out.resume;
  if (out.update !== undefined && out.update !== null) {
    if (typeof out.update !== "object")
      throw invalid("command.update must be an object of channel values or a list of [channel, value] pairs");
    command.update = out.update;
  }
  if (out.goto !== undefined && out.goto !== null) {
    const list = Array.isArray(out.goto) ? out.goto : [out.goto];
    for (const item of list) {
      const ok =
        typeof item === "string" ||
        (typeof item === "object" && item !== null && !Array.isArray(item) && typeof item.node === "string");
      if (!ok) throw invalid("command.goto must be a node name, a {node, input} send, or a list of them");
    }
    command.goto = out.goto;
  }
  if (Object.keys(command).length === 0)
    throw invalid("command must set at least one of resume, update or goto");
  return command;
}

function parseCheckpoint(request: CreateRunRequest): RunRequest["checkpoint"] {
  const checkpoint = object(request.checkpoint, "checkpoint");
  const flatId = text(request.checkpointId, "checkpoint_id");
  const id = checkpoint?.checkpoint_id ?? flatId;
  if (id === undefined || id === null) return null;
  if (typeof id !== "string" || id === "")
    throw invalid("checkpoint.checkpoint_id must be a non-empty string");
  const ns = checkpoint?.checkpoint_ns ?? "";
  if (typeof ns !== "string") throw invalid("checkpoint.checkpoint_ns must be a string");
  const threadId = checkpoint?.thread_id;
  if (threadId !== undefined && threadId !== null && typeof threadId !== "string")
    throw invalid("checkpoint.thread_id must be a string");
  return {
    checkpoint_id: id,
    checkpoint_ns: ns,
    ...(typeof threadId === "string" ? { thread_id: threadId } : {}),
  };
}

function parseConfig(value: Value | undefined): JsonObject {
  const config = object(value, "config") ?? {};
  const { configurable, recursion_limit: limit, tags } = config;
  if (
    configurable !== undefined &&
    configurable !== null &&
    (typeof configurable !== "object" || Array.isArray(configurable))
  )
    throw invalid("config.configurable must be a JSON object");
  if (
    limit !== undefined &&
    limit !== null &&
    (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1)
  )
    throw invalid("config.recursion_limit must be a whole number of 1 or more");
  if (
    tags !== undefined &&
    tags !== null &&
    !(Array.isArray(tags) && tags.every((t) => typeof t === "string"))
  )
    throw invalid("config.tags must be a list of strings");
  return config;
}

/** Validates a run-creating request; `stateless` runs take no checkpoint or thread options. */
export function parseRunRequest(request: CreateRunRequest, stateless: boolean): RunRequest {
  const after = json(request.afterSeconds);
  if (after !== undefined && (typeof after !== "number" || !(after >= 0) || after > MAX_AFTER_SECONDS))
    throw invalid(`after_seconds must be a number of seconds from 0 to ${MAX_AFTER_SECONDS}`);
  const webhook = text(request.webhook, "webhook") ?? null;
  if (webhook !== null && isLoopbackWebhook(webhook)) {
    const problem = loopbackPathProblem(webhook);
    if (problem) throw invalid(problem);
  }
  if (webhook !== null && (webhook.length > MAX_WEBHOOK_LENGTH || !/^(https?:\/\/|\/)/i.test(webhook)))
    throw invalid(
      'webhook must be an http:// or https:// URL, or a path of this server starting with "/", of at most 65,536 characters',
    );
  const checkpointDuring = flag(request.checkpointDuring, "checkpoint_during");
  const durabilityRaw = text(request.durability, "durability");
  const durability =
    durabilityRaw !== undefined
      ? oneOf(durabilityRaw, ["sync", "async", "exit"] as const, "durability")
      : checkpointDuring === false
        ? "exit"
        : null;
  const feedback = json(request.feedbackKeys);
  if (feedback !== undefined && !(Array.isArray(feedback) && feedback.every((k) => typeof k === "string")))
    throw invalid("feedback_keys must be a list of strings");
  const checkpoint = parseCheckpoint(request);
  if (stateless && checkpoint)
    throw invalid("a stateless run starts on a new thread: it takes no checkpoint");
  const input = json(request.input);
  return {
    assistantId: request.assistantId,
    input: input ?? null,
    command: parseCommand(request.command),
    config: parseConfig(request.config),
    context: object(request.context, "context") ?? {},
    metadata: object(request.metadata, "metadata") ?? {},
    streamModes: parseStreamModes(json(request.streamMode)),
    subgraphs: request.streamSubgraphs ?? false,
    resumable: request.streamResumable ?? false,
    interruptBefore: nodeList(request.interruptBefore, "interrupt_before"),
    interruptAfter: nodeList(request.interruptAfter, "interrupt_after"),
    checkpoint,
    webhook,
    multitaskStrategy: oneOf(
      text(request.multitaskStrategy, "multitask_strategy"),
      STRATEGIES,
      "multitask_strategy",
      "enqueue",
    ),
    ifNotExists: oneOf(
      text(request.ifNotExists, "if_not_exists"),
      ["create", "reject"] as const,
      "if_not_exists",
      "reject",
    ),
    onCompletion: oneOf(
      text(request.onCompletion, "on_completion"),
      ["delete", "keep"] as const,
      "on_completion",
      "delete",
    ),
    onDisconnect: oneOf(
      text(request.onDisconnect, "on_disconnect"),
      ["cancel", "continue"] as const,
      "on_disconnect",
      "continue",
    ),
    afterSeconds: typeof after === "number" ? after : 0,
    durability,
    feedbackKeys: (feedback as string[] | undefined) ?? null,
    langsmithTracer: object(request.langsmithTracer, "langsmith_tracer") ?? null,
    ...(flag(request.strictResume, "strict_resume") ? { strictResume: true } : {}),
  };
}

/**
 * The namespaces a stream keeps (`namespace` query parameters: `""` is the root graph, a subgraph's
 * is its segments joined by `|`); undefined for every namespace.
 */
export function parseStreamNamespaces(raw: readonly string[]): ReadonlySet<string> | undefined {
  if (raw.length === 0) return undefined;
  for (const ns of raw)
    if (ns.length > 1024) throw invalid("namespace must be a namespace of the run: at most 1,024 characters");
  return new Set(raw);
}

/** A boolean query parameter as the SDKs send it: 1/0, true/false. */
export function parseFlag(value: string | undefined, field: string): boolean {
  if (value === undefined || value === "") return false;
  if (value === "1" || value === "true") return true;
  if (value === "0" || value === "false") return false;
  throw invalid(`${field} must be 1, 0, true or false; got ${JSON.stringify(value)}`);
}

/** A cancel action. */
export function parseCancelAction(value: string | undefined): CancelAction {
  return oneOf(value, ["interrupt", "rollback"] as const, "action", "interrupt");
}

/** The statuses a runs list may filter by. */
export const RUN_STATUSES: readonly RunStatus[] = [
  "pending",
  "running",
  "error",
  "success",
  "timeout",
  "interrupted",
];
