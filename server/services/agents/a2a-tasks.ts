/**
 * How runs look as A2A tasks, and A2A messages as graph input: a task is a run (its id is the run's,
 * its context the run's thread); text parts become a `messages` entry, data parts are merged into
 * the input; a run that stopped at an interrupt asks for input (`input-required`).
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { AgentRunRecord } from "../../store/agents/agent-run-store.js";
import type { ThreadRecord } from "../../store/agents/thread-store.js";
import type {
  A2aMessage,
  A2aTask,
  Artifact,
  HistoryScope,
  Part,
  TaskState,
  TaskStatus,
} from "./a2a-protocol.js";

/** What decides a task's state beyond its run's status: whether the run left its thread waiting. */
export interface TaskContext {
  /** The task's id: its first run's. */
  taskId: string;
  /** The newest run of the task. */
  run: AgentRunRecord;
  /** The run's thread, when it still exists. */
  thread: ThreadRecord | undefined;
  /** Whether a later run on the thread exists (then the thread's state is no longer this run's). */
  superseded: boolean;
  /** The id of the message the task began with (its first run's last input message), if any. */
  startMessageId?: string | undefined;
}

/** The id of the last input message of a run (the A2A message a task began with), if any. */
export function startMessageIdOf(run: AgentRunRecord): string | undefined {
  const input = run.kwargs.input;
  const last = messagesOf(isObject(input) ? input : undefined).at(-1);
  return typeof last?.id === "string" ? last.id : undefined;
}

/**
 * The messages of the task's own turn: from the message it began with, or, for a task begun with
 * data alone, from the last user message on.
 */
function taskTurn(history: A2aMessage[], startMessageId: string | undefined): A2aMessage[] {
  const start = startMessageId === undefined ? -1 : history.findIndex((m) => m.messageId === startMessageId);
  if (start >= 0) return history.slice(start);
  const lastUser = history.findLastIndex((m) => m.role === "user");
  return history.slice(Math.max(lastUser, 0));
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether the run stopped at an interrupt and waits for an answer. */
function waitsForInput(ctx: TaskContext): boolean {
  return ctx.run.status === "success" && !ctx.superseded && ctx.thread?.status === "interrupted";
}

/** The A2A state of a task. */
export function taskState(ctx: TaskContext): TaskState {
  switch (ctx.run.status) {
    case "pending":
      return "submitted";
    case "running":
      return "working";
    case "error":
    case "timeout":
      return "failed";
    case "interrupted":
      return "canceled";
    case "success":
      return waitsForInput(ctx) ? "input-required" : "completed";
  }
}

/** The text of a LangChain message's content (a string, or a list of content blocks). */
function textOf(content: JsonValue | undefined): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) =>
      isObject(block) && block.type === "text" && typeof block.text === "string" ? block.text : "",
    )
    .join("");
}

/** A serialised LangChain message's type: `human`, `ai`, `tool`, `system`… (`role` in input form). */
function typeOf(message: JsonObject): string | undefined {
  const type = message.type ?? message.role;
  if (type === "user") return "human";
  if (type === "assistant") return "ai";
  return typeof type === "string" ? type : undefined;
}

/** The `messages` of a state's values, when it has a list of them. */
function messagesOf(values: JsonValue | null | undefined): JsonObject[] {
  if (!isObject(values) || !Array.isArray(values.messages)) return [];
  return values.messages.filter(isObject);
}

/** The conversation of a state as A2A messages: human and AI messages with text; tool calls are left out. */
export function historyOf(
  values: JsonValue | null | undefined,
  taskId: string,
  contextId: string,
): A2aMessage[] {
  const history: A2aMessage[] = [];
  messagesOf(values).forEach((message, index) => {
    const type = typeOf(message);
    if (type !== "human" && type !== "ai") return;
    const text = textOf(message.content);
    if (text === "") return;
    history.push({
      kind: "message",
      messageId: typeof message.id === "string" && message.id !== "" ? message.id : `${taskId}-${index}`,
      role: type === "human" ? "user" : "agent",
      parts: [{ kind: "text", text }],
      contextId,
      taskId,
    });
  });
  return history;
}

/** An agent message with one part that shows `value`: its text, or its JSON as data. */
function agentMessage(value: JsonValue, messageId: string, ctx: TaskContext): A2aMessage {
  const part: Part =
    typeof value === "string"
      ? { kind: "text", text: value }
      : { kind: "data", data: isObject(value) ? value : { value } };
  return {
    kind: "message",
    messageId,
    role: "agent",
    parts: [part],
    contextId: ctx.run.threadId,
    taskId: ctx.taskId,
  };
}

/** What the interrupts of the thread ask: each interrupt's value. */
function interruptValues(thread: ThreadRecord | undefined): JsonValue[] {
  if (!thread) return [];
  return Object.values(thread.interrupts).flatMap((list) =>
    Array.isArray(list) ? list.map((i) => (isObject(i) && "value" in i ? (i.value ?? null) : i)) : [],
  );
}

function statusOf(ctx: TaskContext, state: TaskState): TaskStatus {
  const status: TaskStatus = { state, timestamp: ctx.run.updatedAt.toISOString() };
  if (state === "input-required") {
    const asked = interruptValues(ctx.thread);
    if (asked.length > 0)
      status.message = agentMessage(asked.length === 1 ? asked[0]! : asked, `${ctx.run.runId}-input`, ctx);
  } else if (state === "failed") {
    const failure = isObject(ctx.run.output) ? ctx.run.output.__error__ : undefined;
    const text =
      isObject(failure) && typeof failure.message === "string"
        ? `${typeof failure.error === "string" ? `${failure.error}: ` : ""}${failure.message}`
        : `the run ended with status ${ctx.run.status}`;
    status.message = agentMessage(text, `${ctx.run.runId}-error`, ctx);
  }
  return status;
}

/**
 * The artifact of a completed run: the text of its last AI message when its state has messages,
 * else its final values as data.
 */
export function artifactOf(run: AgentRunRecord): Artifact | undefined {
  const messages = messagesOf(run.output);
  const last = messages.at(-1);
  if (last && typeOf(last) === "ai" && textOf(last.content) !== "")
    return { artifactId: run.runId, name: "result", parts: [{ kind: "text", text: textOf(last.content) }] };
  if (messages.length === 0 && isObject(run.output) && Object.keys(run.output).length > 0)
    return { artifactId: run.runId, name: "result", parts: [{ kind: "data", data: run.output }] };
  return undefined;
}

/**
 * A task as `tasks/get` and `message/send` answer it; with `historyLength` only that many of the
 * latest messages (all when undefined, none for 0), of the whole context or (scope `task`) of the
 * task's own turn, the scope applied first.
 */
export function taskOf(
  ctx: TaskContext,
  historyLength: number | undefined,
  scope: HistoryScope = "context",
): A2aTask {
  const state = taskState(ctx);
  const task: A2aTask = {
    kind: "task",
    id: ctx.taskId,
    contextId: ctx.run.threadId,
    status: statusOf(ctx, state),
  };
  const artifact = state === "completed" ? artifactOf(ctx.run) : undefined;
  if (artifact) task.artifacts = [artifact];
  // The thread's state is this run's until a later run changes it; a stopped run's last values
  // chunk may hold only the interrupt.
  const values = ctx.superseded || !ctx.thread ? ctx.run.output : ctx.thread.values;
  const whole = historyOf(values, ctx.taskId, ctx.run.threadId);
  const history = scope === "task" ? taskTurn(whole, ctx.startMessageId) : whole;
  if (historyLength !== 0)
    task.history = historyLength === undefined ? history : history.slice(-historyLength);
  return task;
}

/** The graph input of a message: data parts merged, text parts as one `messages` entry. */
export function inputOf(message: A2aMessage): { input: JsonObject; hasText: boolean } {
  const input: JsonObject = {};
  const texts: string[] = [];
  for (const part of message.parts) {
    if (part.kind === "data") Object.assign(input, part.data);
    else texts.push(part.text);
  }
  if (texts.length > 0) {
    const previous = Array.isArray(input.messages) ? input.messages : [];
    input.messages = [
      ...previous,
      { role: message.role === "user" ? "human" : "ai", content: texts.join("\n"), id: message.messageId },
    ];
  }
  return { input, hasText: texts.length > 0 };
}

/**
 * The answer a message gives to an interrupt (`Command.resume`): its text, its data, or both as
 * `{text, ...data}`.
 */
export function resumeValueOf(message: A2aMessage): JsonValue {
  const data: JsonObject = {};
  const texts: string[] = [];
  for (const part of message.parts) {
    if (part.kind === "data") Object.assign(data, part.data);
    else texts.push(part.text);
  }
  if (Object.keys(data).length === 0) return texts.join("\n");
  return texts.length === 0 ? data : { ...data, text: texts.join("\n") };
}

/** The AI message a `values` event adds, when its last message is one with text. */
export function latestAgentText(values: JsonValue): { id: string | undefined; text: string } | undefined {
  const last = messagesOf(values).at(-1);
  if (!last || typeOf(last) !== "ai") return undefined;
  const text = textOf(last.content);
  if (text === "") return undefined;
  return { id: typeof last.id === "string" ? last.id : undefined, text };
}
