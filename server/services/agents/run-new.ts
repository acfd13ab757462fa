import type { JsonObject } from "@bufbuild/protobuf";
import { uuidv7 } from "../../ids.js";
import type { ConfigurableHeadersConfig } from "../../runtime/graph-config.js";
import { type RunKwargs, runConfigOf, runKwargsJson } from "../../runtime/run-kwargs.js";
import type { NewRun, RunCreator } from "../../store/agents/agent-run-store.js";
import type { AssistantRecord } from "../../store/agents/assistant-store.js";
import type { ThreadRecord } from "../../store/agents/thread-store.js";
import type { RunRequest } from "./run-requests.js";

/** A header name matches a `*`-wildcard pattern, case-insensitively. */
function matches(pattern: string, name: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split("*")
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
    "i",
  );
  return re.test(name);
}

/**
 * The request headers the graphs file lets into `config.configurable` (`http.configurable_headers`
 * include patterns, minus exclude patterns). Credentials never pass, whatever the patterns say.
 */
export function configurableHeaders(
  headers: Headers,
  config: ConfigurableHeadersConfig | undefined,
): JsonObject {
  if (!config || config.include.length === 0) return {};
  const out: JsonObject = {};
  headers.forEach((value, name) => {
    if (name === "x-api-key" || name === "authorization" || name === "cookie") return;
    if (!config.include.some((p) => matches(p, name))) return;
    if (config.exclude.some((p) => matches(p, name))) return;
    out[name] = value;
  });
  return out;
}

function objectOf(value: unknown): JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
}

/** What a new run is made of. */
export interface NewRunParts {
  workspaceId: string;
  threadId: string;
  /** The thread as read under its queue's lock; undefined for a thread the run creates. */
  thread: ThreadRecord | undefined;
  /** Whether the run is stateless (its thread is new, and deleted after it unless kept). */
  stateless: boolean;
  assistant: AssistantRecord;
  request: RunRequest;
  /** The request's headers: `http.configurable_headers` copies some into the run's config. */
  headers: Headers;
  /** Who creates the run: its trace counts in usage under them. */
  creator: RunCreator;
}

/** The run a request makes: a new id, and the assistant's, thread's and request's config merged. */
export function newRunOf(
  deps: { configurableHeaders: ConfigurableHeadersConfig | undefined },
  { workspaceId, threadId, thread, stateless, assistant, request, headers, creator }: NewRunParts,
): NewRun {
  const threadConfig = objectOf(thread?.config);
  const requestConfig = request.config;
  const config = {
    ...assistant.config,
    ...threadConfig,
    ...requestConfig,
    configurable: {
      ...objectOf(assistant.config.configurable),
      ...objectOf(threadConfig.configurable),
      ...objectOf(requestConfig.configurable),
      ...configurableHeaders(headers, deps.configurableHeaders),
    },
  };
  const kwargs: RunKwargs = {
    input: request.input,
    command: request.command,
    config: runConfigOf(config),
    context: { ...objectOf(assistant.context), ...request.context },
    stream_mode: request.streamModes,
    subgraphs: request.subgraphs,
    resumable: request.resumable,
    interrupt_before: request.interruptBefore,
    interrupt_after: request.interruptAfter,
    checkpoint: request.checkpoint
      ? {
          checkpoint_id: request.checkpoint.checkpoint_id,
          checkpoint_ns: request.checkpoint.checkpoint_ns,
        }
      : null,
    durability: request.durability,
    webhook: request.webhook,
    feedback_keys: request.feedbackKeys,
    temporary: stateless && request.onCompletion === "delete",
    on_disconnect: request.onDisconnect,
    langsmith_tracer: request.langsmithTracer,
    ...(request.protocol ? { protocol: true as const } : {}),
    ...(request.protocol && request.protocol.answers.length > 0
      ? { protocol_answers: request.protocol.answers }
      : {}),
    ...(request.strictResume ? { strict_resume: true as const } : {}),
    extra: {},
  };
  return {
    workspaceId,
    runId: uuidv7(),
    threadId,
    assistantId: assistant.assistantId,
    graphId: assistant.graphId,
    metadata: request.metadata,
    kwargs: runKwargsJson(kwargs),
    multitaskStrategy: request.multitaskStrategy,
    temporary: kwargs.temporary,
    afterSeconds: request.afterSeconds,
    creator,
  };
}
