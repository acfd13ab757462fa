import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { STREAM_MODES, type StreamMode } from "./run-stream-modes.js";

/** A command instead of input, as the API takes it. */
export interface RunCommand {
  resume?: JsonValue;
  update?: JsonValue;
  goto?: JsonValue;
}

/**
 * The run config the graph gets: the assistant's, the thread's and the request's, merged. Keys
 * besides these three go to the graph as they are.
 */
export interface RunConfig {
  tags?: string[];
  recursion_limit?: number;
  configurable: JsonObject;
  [key: string]: JsonValue | undefined;
}

/** Durability of a run's checkpoints, as the API names it; null leaves LangGraph's default. */
export type RunDurability = "sync" | "async" | "exit" | null;

/**
 * A run's stored create payload (`Run.kwargs`): everything the worker needs to execute it, already
 * validated and merged by the service. Stored as JSON ({@link runKwargsJson}) and read back with
 * {@link runKwargsOf}; keys this version does not know are kept in `extra` both ways.
 */
export interface RunKwargs {
  input: JsonValue;
  command: RunCommand | null;
  config: RunConfig;
  context: JsonObject;
  stream_mode: StreamMode[];
  /** Stream subgraph events as `<mode>|<namespace>`. */
  subgraphs: boolean;
  /** Keep the events after the run ends, for joins with `Last-Event-ID`. */
  resumable: boolean;
  interrupt_before: "*" | string[] | null;
  interrupt_after: "*" | string[] | null;
  /** The checkpoint to start from. */
  checkpoint: { checkpoint_id: string; checkpoint_ns: string } | null;
  durability: RunDurability;
  webhook: string | null;
  feedback_keys: string[] | null;
  /** A stateless run whose thread is deleted when it ends. */
  temporary: boolean;
  on_disconnect: "cancel" | "continue";
  /**
   * A run of the thread-centric streaming protocol: it streams protocol events (every channel, of
   * every namespace) instead of the stream modes' events.
   */
  protocol?: true;
  /** A protocol run that answers interrupts: their ids, announced as its first event. */
  protocol_answers?: string[];
  /**
   * Refuse the resume when an interrupt it answers by id is not waiting: the run then fails before
   * the graph runs (`UnknownInterruptError`), and the thread stays as it was.
   */
  strict_resume?: true;
  /** The request's `langsmith_tracer` (its `project_name` names the tracing project); null when absent. */
  langsmith_tracer: JsonObject | null;
  /** Keys of the stored payload this version does not read, kept as they are. */
  extra: JsonObject;
}

/** The keys {@link runKwargsOf} reads; any other key of a stored payload goes to `extra`. */
const KNOWN_KEYS = new Set([
  "input",
  "command",
  "config",
  "context",
  "stream_mode",
  "subgraphs",
  "resumable",
  "interrupt_before",
  "interrupt_after",
  "checkpoint",
  "durability",
  "webhook",
  "feedback_keys",
  "temporary",
  "on_disconnect",
  "protocol",
  "protocol_answers",
  "strict_resume",
  "langsmith_tracer",
]);

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The error of a stored payload that does not read as this version writes it. */
function malformed(what: string): Error {
  return Object.assign(new Error(`the run's stored kwargs are malformed: ${what}`), {
    name: "RunKwargsError",
  });
}

function stringList(value: JsonValue | undefined, key: string): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string"))
    throw malformed(`${key} must be a list of strings`);
  return value as string[];
}

function nodeList(value: JsonValue | undefined, key: string): "*" | string[] | null {
  return value === "*" ? "*" : stringList(value, key);
}

function objectOr(value: JsonValue | undefined, key: string, absent: JsonObject | null): JsonObject | null {
  if (value === undefined || value === null) return absent;
  if (!isObject(value)) throw malformed(`${key} must be a JSON object`);
  return value;
}

function flag(value: JsonValue | undefined, key: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== "boolean") throw malformed(`${key} must be true or false`);
  return value;
}

function oneOf<T extends string>(value: JsonValue | undefined, allowed: readonly T[], key: string): T | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value))
    throw malformed(`${key} must be one of ${allowed.join(", ")}`);
  return value as T;
}

/**
 * A config (the merged config of a new run, or a stored run's) as {@link RunConfig}: `tags` must
 * be a list of strings, `recursion_limit` a number and `configurable` an object (throws a
 * `RunKwargsError` otherwise); its other keys are kept as they are.
 */
export function runConfigOf(value: JsonValue | undefined): RunConfig {
  const { tags, recursion_limit: limit, configurable, ...rest } = objectOr(value, "config", {}) ?? {};
  const tagList = stringList(tags, "config.tags");
  if (limit !== undefined && limit !== null && typeof limit !== "number")
    throw malformed("config.recursion_limit must be a number");
  return {
    ...rest,
    ...(tagList ? { tags: tagList } : {}),
    ...(typeof limit === "number" ? { recursion_limit: limit } : {}),
    configurable: objectOr(configurable, "config.configurable", {}) ?? {},
  };
}

function readCommand(value: JsonValue | undefined): RunCommand | null {
  const command = objectOr(value, "command", null);
  if (!command) return null;
  return {
    ...(command.resume !== undefined ? { resume: command.resume } : {}),
    ...(command.update !== undefined ? { update: command.update } : {}),
    ...(command.goto !== undefined ? { goto: command.goto } : {}),
  };
}

function readCheckpoint(value: JsonValue | undefined): RunKwargs["checkpoint"] {
  const checkpoint = objectOr(value, "checkpoint", null);
  if (!checkpoint) return null;
  const { checkpoint_id: id, checkpoint_ns: ns } = checkpoint;
  if (typeof id !== "string" || (ns !== undefined && typeof ns !== "string"))
    throw malformed("checkpoint must name a checkpoint_id and a checkpoint_ns");
  return { checkpoint_id: id, checkpoint_ns: ns ?? "" };
}

/**
 * A run's stored payload as {@link RunKwargs}: the keys a version of this server writes, each
 * checked for its type (throws a `RunKwargsError` naming the key that is not), with the defaults
 * of the API for keys an older version did not write.
 */
export function runKwargsOf(json: JsonObject): RunKwargs {
  const extra: JsonObject = {};
  for (const [key, value] of Object.entries(json)) if (!KNOWN_KEYS.has(key)) extra[key] = value;
  const modes = stringList(json.stream_mode, "stream_mode") ?? ["values"];
  if (!modes.every((m) => (STREAM_MODES as readonly string[]).includes(m)))
    throw malformed(`stream_mode must name modes of ${STREAM_MODES.join(", ")}`);
  const webhook = json.webhook;
  if (webhook !== undefined && webhook !== null && typeof webhook !== "string")
    throw malformed("webhook must be a string");
  return {
    input: json.input ?? null,
    command: readCommand(json.command),
    config: runConfigOf(json.config),
    context: objectOr(json.context, "context", {}) ?? {},
    stream_mode: modes as StreamMode[],
    subgraphs: flag(json.subgraphs, "subgraphs"),
    resumable: flag(json.resumable, "resumable"),
    interrupt_before: nodeList(json.interrupt_before, "interrupt_before"),
    interrupt_after: nodeList(json.interrupt_after, "interrupt_after"),
    checkpoint: readCheckpoint(json.checkpoint),
    durability: oneOf(json.durability, ["sync", "async", "exit"] as const, "durability"),
    webhook: typeof webhook === "string" ? webhook : null,
    feedback_keys: stringList(json.feedback_keys, "feedback_keys"),
    temporary: flag(json.temporary, "temporary"),
    on_disconnect: oneOf(json.on_disconnect, ["cancel", "continue"] as const, "on_disconnect") ?? "continue",
    ...(flag(json.protocol, "protocol") ? { protocol: true as const } : {}),
    ...(json.protocol_answers === undefined || json.protocol_answers === null
      ? {}
      : { protocol_answers: stringList(json.protocol_answers, "protocol_answers") ?? [] }),
    ...(flag(json.strict_resume, "strict_resume") ? { strict_resume: true as const } : {}),
    langsmith_tracer: objectOr(json.langsmith_tracer, "langsmith_tracer", null),
    extra,
  };
}

/** The config as stored: its keys that are set. */
function configJson(config: RunConfig): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(config)) if (value !== undefined) out[key] = value;
  return out;
}

function commandJson(command: RunCommand): JsonObject {
  const out: JsonObject = {};
  if (command.resume !== undefined) out.resume = command.resume;
  if (command.update !== undefined) out.update = command.update;
  if (command.goto !== undefined) out.goto = command.goto;
  return out;
}

/** `kwargs` as stored in the run's row and shown as `Run.kwargs` (the inverse of {@link runKwargsOf}). */
export function runKwargsJson(kwargs: RunKwargs): JsonObject {
  return {
    ...kwargs.extra,
    input: kwargs.input,
    command: kwargs.command ? commandJson(kwargs.command) : null,
    config: configJson(kwargs.config),
    context: kwargs.context,
    stream_mode: kwargs.stream_mode,
    subgraphs: kwargs.subgraphs,
    resumable: kwargs.resumable,
    interrupt_before: kwargs.interrupt_before,
    interrupt_after: kwargs.interrupt_after,
    checkpoint: kwargs.checkpoint,
    durability: kwargs.durability,
    webhook: kwargs.webhook,
    feedback_keys: kwargs.feedback_keys,
    temporary: kwargs.temporary,
    on_disconnect: kwargs.on_disconnect,
    ...(kwargs.protocol ? { protocol: true } : {}),
    ...(kwargs.protocol_answers ? { protocol_answers: kwargs.protocol_answers } : {}),
    ...(kwargs.strict_resume ? { strict_resume: true } : {}),
    ...(kwargs.langsmith_tracer ? { langsmith_tracer: kwargs.langsmith_tracer } : {}),
  };
}
