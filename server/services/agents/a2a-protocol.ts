/**
 * The A2A protocol (version 0.3.0) as agentplane speaks it: the shapes it answers, its JSON-RPC
 * error codes, and the validation of the parameters it takes. Written from the protocol's
 * specification; nothing here knows about runs.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { isUuid } from "../../ids.js";

/** The protocol version the agent cards declare. */
export const A2A_PROTOCOL_VERSION = "0.3.0";

/** JSON-RPC 2.0 and A2A error codes. */
export const A2A_ERRORS = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotificationNotSupported: -32003,
  contentTypeNotSupported: -32005,
  authenticatedExtendedCardNotConfigured: -32007,
} as const;

/** An error answered as a JSON-RPC error object. */
export class A2aError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = "A2aError";
  }
}

/** The states of an A2A task. */
export type TaskState =
  | "submitted"
  | "working"
  | "input-required"
  | "completed"
  | "canceled"
  | "failed"
  | "rejected"
  | "auth-required"
  | "unknown";

/** A part of a message or artifact: agentplane takes and gives text and structured data. */
export type Part = { kind: "text"; text: string } | { kind: "data"; data: JsonObject };

/** A message of a conversation. */
export interface A2aMessage {
  kind: "message";
  messageId: string;
  role: "user" | "agent";
  parts: Part[];
  contextId?: string;
  taskId?: string;
}

/** A task's status. */
export interface TaskStatus {
  state: TaskState;
  message?: A2aMessage;
  /** ISO 8601. */
  timestamp: string;
}

/** What a task produced. */
export interface Artifact {
  artifactId: string;
  name?: string;
  parts: Part[];
}

/** A task: one run (or one run and the runs that answered its questions). */
export interface A2aTask {
  kind: "task";
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: A2aMessage[];
}

/** A streamed change of a task's status; `final` on the last event of a stream. */
export interface TaskStatusUpdateEvent {
  kind: "status-update";
  taskId: string;
  contextId: string;
  status: TaskStatus;
  final: boolean;
}

/** A streamed artifact of a task. */
export interface TaskArtifactUpdateEvent {
  kind: "artifact-update";
  taskId: string;
  contextId: string;
  artifact: Artifact;
  lastChunk: boolean;
}

/** What `message/stream` sends: the task first, then its updates. */
export type StreamResult = A2aTask | TaskStatusUpdateEvent | TaskArtifactUpdateEvent;

/**
 * Which messages a task's history holds: the whole context's conversation (the default), or only
 * the task's own turn (`historyScope: "task"`, the Agent Server's history-scope extension).
 */
export type HistoryScope = "context" | "task";

/** The history-scope values, as the agent card advertises them. */
export const HISTORY_SCOPES: readonly HistoryScope[] = ["context", "task"];

/** The header a client that cannot add body fields names the scope with; the body's value wins. */
export const HISTORY_SCOPE_HEADER = "LangGraph-A2A-History-Scope";

/** The agent card's advertisement of history scopes (the Agent Server's extension, by its URI). */
export const HISTORY_SCOPE_EXTENSION = {
  uri: "https://langchain.com/a2a/extensions/history-scope/v1",
  description: "Choose task-only or full-context response history",
  required: false,
  params: {
    header: HISTORY_SCOPE_HEADER,
    values: [...HISTORY_SCOPES],
    default: "context",
    methods: ["SendMessage", "GetTask", "ListTasks", "message/send", "tasks/get"],
  },
};

/** `message/send` and `message/stream` parameters, validated. */
export interface SendParams {
  message: A2aMessage;
  /** Wait for the task to end (the default) or answer at once. */
  blocking: boolean;
  /** Messages of history to include; all when undefined. */
  historyLength: number | undefined;
  /** Undefined when the request names none (the header's, else `context`, applies). */
  historyScope: HistoryScope | undefined;
}

/** `tasks/get` and `tasks/cancel` parameters, validated. */
export interface TaskParams {
  id: string;
  historyLength: number | undefined;
  historyScope: HistoryScope | undefined;
}

/** Validates a `historyScope` value; undefined when absent. */
export function historyScope(value: JsonValue | undefined, at: string): HistoryScope | undefined {
  if (value === undefined || value === null) return undefined;
  if (value !== "context" && value !== "task")
    throw invalidParams(`${at} must be "context" or "task", got ${JSON.stringify(value)}`);
  return value;
}

/** Largest `historyLength` accepted: a conversation's messages are loaded whole anyway. */
const MAX_HISTORY_LENGTH = 10_000;

function invalidParams(message: string): A2aError {
  return new A2aError(A2A_ERRORS.invalidParams, message);
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function historyLength(value: JsonValue | undefined, at: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_HISTORY_LENGTH)
    throw invalidParams(`${at} must be a whole number from 0 to ${MAX_HISTORY_LENGTH}`);
  return value;
}

function optionalString(parent: JsonObject, key: string, at: string): string | undefined {
  const value = parent[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value === "")
    throw invalidParams(`${at}.${key} must be a non-empty string`);
  return value;
}

function parsePart(value: JsonValue, at: string): Part {
  if (!isObject(value)) throw invalidParams(`${at} must be an object with a kind: "text" or "data"`);
  if (value.kind === "text") {
    if (typeof value.text !== "string") throw invalidParams(`${at}.text must be a string`);
    return { kind: "text", text: value.text };
  }
  if (value.kind === "data") {
    if (!isObject(value.data)) throw invalidParams(`${at}.data must be a JSON object`);
    return { kind: "data", data: value.data };
  }
  if (value.kind === "file")
    throw new A2aError(
      A2A_ERRORS.contentTypeNotSupported,
      `${at} is a file part: this agent takes text and data parts only`,
    );
  throw invalidParams(`${at}.kind must be "text" or "data", got ${JSON.stringify(value.kind ?? null)}`);
}

/** Validates `message/send` and `message/stream` parameters. */
export function parseSendParams(params: JsonValue | undefined): SendParams {
  if (!isObject(params)) throw invalidParams("params must be an object with a message");
  const message = params.message;
  if (!isObject(message)) throw invalidParams("params.message must be a message object");
  if (message.kind !== undefined && message.kind !== "message")
    throw invalidParams(`params.message.kind must be "message"`);
  if (message.role !== "user" && message.role !== "agent")
    throw invalidParams(`params.message.role must be "user" or "agent"`);
  const messageId = optionalString(message, "messageId", "params.message");
  if (messageId === undefined) throw invalidParams("params.message.messageId is required");
  if (!Array.isArray(message.parts) || message.parts.length === 0)
    throw invalidParams("params.message.parts must be a non-empty list of parts");
  const parts = message.parts.map((part, i) => parsePart(part, `params.message.parts[${i}]`));
  const contextId = optionalString(message, "contextId", "params.message");
  if (contextId !== undefined && !isUuid(contextId))
    throw invalidParams(
      `params.message.contextId must be a context id this agent gave (a UUID), got ${JSON.stringify(contextId)}; leave it out to start a new context`,
    );
  const taskId = optionalString(message, "taskId", "params.message");
  const configuration = params.configuration;
  if (configuration !== undefined && configuration !== null && !isObject(configuration))
    throw invalidParams("params.configuration must be an object");
  const blocking = configuration?.blocking;
  if (blocking !== undefined && blocking !== null && typeof blocking !== "boolean")
    throw invalidParams("params.configuration.blocking must be true or false");
  return {
    message: {
      kind: "message",
      messageId,
      role: message.role,
      parts,
      ...(contextId ? { contextId: contextId.toLowerCase() } : {}),
      ...(taskId ? { taskId } : {}),
    },
    blocking: blocking !== false,
    historyLength: historyLength(configuration?.historyLength, "params.configuration.historyLength"),
    historyScope: historyScope(configuration?.historyScope, "params.configuration.historyScope"),
  };
}

/** Validates `tasks/get` and `tasks/cancel` parameters. */
export function parseTaskParams(params: JsonValue | undefined): TaskParams {
  if (!isObject(params)) throw invalidParams("params must be an object with the task's id");
  const id = params.id;
  if (typeof id !== "string" || id === "") throw invalidParams("params.id must be a task id (a string)");
  return {
    id,
    historyLength: historyLength(params.historyLength, "params.historyLength"),
    historyScope: historyScope(params.historyScope, "params.historyScope"),
  };
}

/** `ListTasks` parameters, validated (A2A 1.0). */
export interface ListParams {
  /** Only tasks of this context. */
  contextId: string | undefined;
  /** Only tasks in this state. */
  state: TaskState | undefined;
  pageSize: number;
  /** Tasks to skip: what a `nextPageToken` this agent gave encodes. */
  offset: number;
  historyLength: number | undefined;
  historyScope: HistoryScope | undefined;
  /** Include each task's artifacts (default true). */
  includeArtifacts: boolean;
}

/** Largest ListTasks page; the default page size too (the A2A specification's suggestion). */
const MAX_PAGE_SIZE = 100;

/** Validates `ListTasks` parameters; `toState` reads a v1.0 state name as a task state. */
export function parseListParams(
  params: JsonValue | undefined,
  toState: (name: string) => TaskState | undefined,
): ListParams {
  const p = params === undefined || params === null ? {} : params;
  if (!isObject(p)) throw invalidParams("params must be an object");
  const contextId = optionalString(p, "contextId", "params");
  const named = optionalString(p, "status", "params");
  // Proto JSON's zero value: no state named, so no filter.
  const rawState = named === "TASK_STATE_UNSPECIFIED" ? undefined : named;
  const state = rawState === undefined ? undefined : toState(rawState);
  if (rawState !== undefined && state === undefined)
    throw invalidParams(
      `params.status must be a task state such as "TASK_STATE_COMPLETED", got ${JSON.stringify(rawState)}`,
    );
  const size = p.pageSize ?? MAX_PAGE_SIZE;
  if (typeof size !== "number" || !Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE)
    throw invalidParams(`params.pageSize must be a whole number from 1 to ${MAX_PAGE_SIZE}`);
  const token = optionalString(p, "pageToken", "params");
  const offset = token === undefined ? 0 : Number(token);
  if (!Number.isInteger(offset) || offset < 0)
    throw invalidParams("params.pageToken must be a nextPageToken this agent answered");
  const include = p.includeArtifacts;
  if (include !== undefined && include !== null && typeof include !== "boolean")
    throw invalidParams("params.includeArtifacts must be true or false");
  return {
    contextId: contextId?.toLowerCase(),
    state,
    pageSize: size,
    offset,
    historyLength: historyLength(p.historyLength, "params.historyLength"),
    historyScope: historyScope(p.historyScope, "params.historyScope"),
    includeArtifacts: include !== false,
  };
}
