/**
 * The A2A 1.0 JSON-RPC binding beside 0.3: 1.0 names its methods `SendMessage`, `GetTask`... and
 * writes its objects as the protocol's proto JSON: no `kind` discriminators, a part is `{text}`,
 * `{data}`, `{raw}` or `{url}`, enums in SCREAMING_SNAKE_CASE (`ROLE_USER`, `TASK_STATE_WORKING`),
 * a stream event is `{task}`, `{message}`, `{statusUpdate}` or `{artifactUpdate}`. agentplane keeps
 * one model (a2a-protocol.ts, the 0.3 shapes) and translates at the edge: 1.0 requests into 0.3
 * parameters, answers out to 1.0 objects. Written from the specification and the shapes the
 * official `@a2a-js/sdk` 1.x client reads.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  A2A_ERRORS,
  A2aError,
  type A2aMessage,
  type A2aTask,
  type Artifact,
  type Part,
  type StreamResult,
  type TaskState,
  type TaskStatus,
} from "./a2a-protocol.js";

/** The 1.0 method names and the 0.3 method each is. */
export const V1_METHODS: Readonly<Record<string, string>> = {
  SendMessage: "message/send",
  SendStreamingMessage: "message/stream",
  GetTask: "tasks/get",
  CancelTask: "tasks/cancel",
  SubscribeToTask: "tasks/resubscribe",
  GetExtendedAgentCard: "agent/getAuthenticatedExtendedCard",
};

/** 1.0 methods with no 0.3 counterpart here. */
export const V1_ONLY_METHODS: ReadonlySet<string> = new Set(["ListTasks"]);

/** 1.0's push-notification methods, which this agent does not offer. */
export const V1_PUSH_METHODS: ReadonlySet<string> = new Set([
  "CreateTaskPushNotificationConfig",
  "GetTaskPushNotificationConfig",
  "ListTaskPushNotificationConfigs",
  "DeleteTaskPushNotificationConfig",
]);

const STATE_NAMES: Readonly<Record<TaskState, string>> = {
  submitted: "TASK_STATE_SUBMITTED",
  working: "TASK_STATE_WORKING",
  "input-required": "TASK_STATE_INPUT_REQUIRED",
  completed: "TASK_STATE_COMPLETED",
  canceled: "TASK_STATE_CANCELED",
  failed: "TASK_STATE_FAILED",
  rejected: "TASK_STATE_REJECTED",
  "auth-required": "TASK_STATE_AUTH_REQUIRED",
  unknown: "TASK_STATE_UNSPECIFIED",
};

/** The task state a 1.0 state name (`TASK_STATE_COMPLETED`) stands for; undefined for none. */
export function stateOfV1Name(name: string): TaskState | undefined {
  const found = Object.entries(STATE_NAMES).find(([, v1]) => v1 === name);
  return found && found[0] !== "unknown" ? (found[0] as TaskState) : undefined;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function invalidParams(message: string): A2aError {
  return new A2aError(A2A_ERRORS.invalidParams, message);
}

/** A 1.0 part as the 0.3 shape the parameter validation reads (`kind` added). */
function partFromV1(part: JsonValue, at: string): JsonValue {
  if (!isObject(part)) throw invalidParams(`${at} must be an object: {"text": ...} or {"data": ...}`);
  if (typeof part.text === "string") return { kind: "text", text: part.text };
  if (part.data !== undefined)
    return { kind: "data", data: isObject(part.data) ? part.data : { value: part.data } };
  if (part.raw !== undefined || part.url !== undefined) return { kind: "file" };
  throw invalidParams(`${at} must have text or data`);
}

/** A 1.0 message as the 0.3 shape: role and parts translated, other members kept. */
function messageFromV1(message: JsonValue | undefined): JsonValue | undefined {
  if (!isObject(message)) return message;
  const role = message.role === "ROLE_USER" ? "user" : message.role === "ROLE_AGENT" ? "agent" : message.role;
  const parts = Array.isArray(message.parts)
    ? message.parts.map((p, i) => partFromV1(p, `params.message.parts[${i}]`))
    : message.parts;
  return { ...message, role: role ?? null, parts: parts ?? null };
}

/**
 * `SendMessage` / `SendStreamingMessage` parameters in the 0.3 shape: the message translated, and
 * `configuration.returnImmediately` read as 0.3's `blocking: false`.
 */
export function sendParamsFromV1(params: JsonValue | undefined): JsonValue | undefined {
  if (!isObject(params)) return params;
  const configuration = isObject(params.configuration) ? params.configuration : undefined;
  const returnImmediately = configuration?.returnImmediately;
  if (returnImmediately !== undefined && returnImmediately !== null && typeof returnImmediately !== "boolean")
    throw invalidParams("params.configuration.returnImmediately must be true or false");
  return {
    ...params,
    message: messageFromV1(params.message) ?? null,
    ...(configuration ? { configuration: { ...configuration, blocking: returnImmediately !== true } } : {}),
  };
}

function partToV1(part: Part): JsonObject {
  return part.kind === "text" ? { text: part.text } : { data: part.data };
}

/** A message in 1.0 form. */
export function messageToV1(message: A2aMessage): JsonObject {
  return {
    messageId: message.messageId,
    ...(message.contextId ? { contextId: message.contextId } : {}),
    ...(message.taskId ? { taskId: message.taskId } : {}),
    role: message.role === "user" ? "ROLE_USER" : "ROLE_AGENT",
    parts: message.parts.map(partToV1),
  };
}

function statusToV1(status: TaskStatus): JsonObject {
  return {
    state: STATE_NAMES[status.state],
    ...(status.message ? { message: messageToV1(status.message) } : {}),
    timestamp: status.timestamp,
  };
}

function artifactToV1(artifact: Artifact): JsonObject {
  return {
    artifactId: artifact.artifactId,
    ...(artifact.name ? { name: artifact.name } : {}),
    parts: artifact.parts.map(partToV1),
  };
}

/** A task in 1.0 form. */
export function taskToV1(task: A2aTask): JsonObject {
  return {
    id: task.id,
    contextId: task.contextId,
    status: statusToV1(task.status),
    ...(task.artifacts ? { artifacts: task.artifacts.map(artifactToV1) } : {}),
    ...(task.history ? { history: task.history.map(messageToV1) } : {}),
  };
}

/** A stream event in 1.0 form (a StreamResponse). */
export function streamResultToV1(event: StreamResult): JsonObject {
  switch (event.kind) {
    case "task":
      return { task: taskToV1(event) };
    case "status-update":
      return {
        statusUpdate: { taskId: event.taskId, contextId: event.contextId, status: statusToV1(event.status) },
      };
    case "artifact-update":
      return {
        artifactUpdate: {
          taskId: event.taskId,
          contextId: event.contextId,
          artifact: artifactToV1(event.artifact),
          lastChunk: event.lastChunk,
        },
      };
  }
}
