/**
 * What a span's attributes say about its run, by the conventions LLM instrumentation writes them
 * in, as LangSmith reads them: its own `langsmith.*` attributes (what the langsmith SDK's OTel
 * exporter sends), the OpenTelemetry GenAI semantic conventions (`gen_ai.*`, current and the older
 * indexed `gen_ai.prompt.N.*` form), Traceloop / OpenLLMetry (`traceloop.*`, `llm.*`), OpenInference
 * (`openinference.span.kind`, `input.value`, `llm.token_count.*`) and the Vercel AI SDK (`ai.*`).
 * Where several say the same thing, the first in that order wins. Every attribute read is taken
 * from the reader: the rest stays in `extra`.
 */
import { RUN_TYPES } from "../run-normalizer.js";
import { type AttributeReader, asObject, type JsonRecord } from "./attribute-reader.js";
import type { AttributeValue } from "./otel-attributes.js";

/** What the conventions found on one span. */
export interface SpanConventions {
  runType: string;
  /** `langsmith.trace.name`, when it renames the span. */
  name: string | undefined;
  inputs: JsonRecord | null;
  outputs: JsonRecord | null;
  /** `extra.metadata`: the span's metadata, model, provider, invocation params and token usage. */
  metadata: JsonRecord;
  tags: string[];
  referenceExampleId: string | undefined;
  /** The project the span names itself (`langsmith.trace.session_id` / `session_name`). */
  sessionId: string | undefined;
  sessionName: string | undefined;
}

/** A message event of the older GenAI conventions, as an input message: its role. */
const MESSAGE_EVENTS: Readonly<Record<string, string>> = {
  "gen_ai.system.message": "system",
  "gen_ai.user.message": "user",
  "gen_ai.assistant.message": "assistant",
  "gen_ai.tool.message": "tool",
};

/** OpenInference span kinds as LangSmith run types (kinds LangSmith has no type for are chains). */
const OPENINFERENCE_KINDS: Readonly<Record<string, string>> = {
  LLM: "llm",
  CHAIN: "chain",
  TOOL: "tool",
  RETRIEVER: "retriever",
  RERANKER: "retriever",
  EMBEDDING: "embedding",
  PROMPT: "prompt",
  AGENT: "chain",
  GUARDRAIL: "chain",
  EVALUATOR: "chain",
};

/** Traceloop span kinds as run types. */
const TRACELOOP_KINDS: Readonly<Record<string, string>> = {
  workflow: "chain",
  task: "chain",
  agent: "chain",
  tool: "tool",
};

/** GenAI operation names as run types. */
const GEN_AI_OPERATIONS: Readonly<Record<string, string>> = {
  chat: "llm",
  text_completion: "llm",
  generate_content: "llm",
  embeddings: "embedding",
  execute_tool: "tool",
  invoke_agent: "chain",
  create_agent: "chain",
};

/** The Vercel AI SDK's model-call operations (run type llm) and its tool call (tool). */
const AI_SDK_LLM = /^ai\.(generateText|streamText|generateObject|streamObject)\.do(Generate|Stream)$/;

/** A span event as the conventions read it. */
export interface EventInput {
  name: string;
  attributes: Map<string, AttributeValue>;
}

/**
 * Reads the conventions from `attrs`. `events` are the span's events: the GenAI message events
 * among them become input and output messages, and are returned in `consumed` so that they are
 * not also kept as run events.
 */
export function readConventions(
  attrs: AttributeReader,
  events: readonly EventInput[],
): SpanConventions & { consumed: Set<EventInput> } {
  const metadata: JsonRecord = {};
  const consumed = new Set<EventInput>();
  const runType = readRunType(attrs);
  const name = attrs.text("langsmith.trace.name", "ai.toolCall.name");
  readMetadata(attrs, metadata);
  readModel(attrs, metadata);
  const usage = readUsage(attrs);
  if (usage) metadata.usage_metadata = usage;
  const inputs = readInputs(attrs, events, consumed);
  const outputs = readOutputs(attrs, events, consumed);
  return {
    runType,
    name,
    inputs,
    outputs,
    metadata,
    tags: readTags(attrs),
    referenceExampleId: attrs.text("langsmith.reference_example_id"),
    sessionId: attrs.text("langsmith.trace.session_id"),
    sessionName: attrs.text("langsmith.trace.session_name"),
    consumed,
  };
}

function readRunType(attrs: AttributeReader): string {
  const langsmith = attrs.text("langsmith.span.kind")?.toLowerCase();
  if (langsmith && (RUN_TYPES as readonly string[]).includes(langsmith)) return langsmith;
  const openInference = OPENINFERENCE_KINDS[attrs.text("openinference.span.kind")?.toUpperCase() ?? ""];
  if (openInference) return openInference;
  const traceloop = TRACELOOP_KINDS[attrs.text("traceloop.span.kind") ?? ""];
  if (traceloop) return traceloop;
  // Read, not taken: the operation also stays in extra, where it says more than the run type.
  const operation = attrs.text("gen_ai.operation.name");
  const requestType = attrs.text("llm.request.type");
  const aiOperation = attrs.text("ai.operationId");
  const byOperation = GEN_AI_OPERATIONS[operation ?? ""];
  restore(attrs, {
    "gen_ai.operation.name": operation,
    "llm.request.type": requestType,
    "ai.operationId": aiOperation,
  });
  if (byOperation) return byOperation;
  if (requestType === "chat" || requestType === "completion") return "llm";
  if (requestType === "embedding") return "embedding";
  if (aiOperation && AI_SDK_LLM.test(aiOperation)) return "llm";
  if (aiOperation === "ai.toolCall") return "tool";
  return "chain";
}

/** Puts back attributes a rule read only to decide. */
function restore(attrs: AttributeReader, values: Record<string, string | undefined>): void {
  for (const [key, value] of Object.entries(values)) if (value !== undefined) attrs.put(key, value);
}

function readMetadata(attrs: AttributeReader, metadata: JsonRecord): void {
  Object.assign(metadata, attrs.takePrefixed("traceloop.association.properties") ?? {});
  const openInference = attrs.json("metadata");
  if (typeof openInference === "object" && openInference !== null && !Array.isArray(openInference))
    Object.assign(metadata, openInference);
  else if (openInference !== undefined) metadata.metadata = openInference;
  for (const [key, target] of [
    ["session.id", "session_id"],
    ["user.id", "user_id"],
    ["gen_ai.conversation.id", "conversation_id"],
  ] as const) {
    const value = attrs.take(key);
    if (value !== undefined) metadata[target] = value;
  }
  Object.assign(metadata, attrs.takePrefixed("ai.telemetry.metadata") ?? {});
  Object.assign(metadata, attrs.takePrefixed("langsmith.metadata") ?? {});
}

function readModel(attrs: AttributeReader, metadata: JsonRecord): void {
  const model = attrs.text("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "ai.model.id");
  if (model !== undefined) metadata.ls_model_name = model;
  // The request's model stays in extra when the response named the one that answered.
  const provider = attrs.text(
    "gen_ai.provider.name",
    "gen_ai.system",
    "llm.provider",
    "llm.system",
    "ai.model.provider",
  );
  if (provider !== undefined) metadata.ls_provider = provider;
  const temperature = attrs.take("gen_ai.request.temperature", "llm.request.temperature");
  if (typeof temperature === "number") metadata.ls_temperature = temperature;
  const maxTokens = attrs.count("gen_ai.request.max_tokens", "llm.request.max_tokens");
  if (maxTokens !== undefined) metadata.ls_max_tokens = maxTokens;
  const params = attrs.json("llm.invocation_parameters");
  if (params !== undefined) metadata.invocation_params = params;
}

/** Token usage as LangChain's `usage_metadata`, which the ingest reads the run's token counts from. */
function readUsage(attrs: AttributeReader): JsonRecord | undefined {
  const langsmith = attrs.json("langsmith.usage_metadata");
  const usage: JsonRecord =
    typeof langsmith === "object" && langsmith !== null && !Array.isArray(langsmith) ? { ...langsmith } : {};
  const input = attrs.count(
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "llm.usage.prompt_tokens",
    "ai.usage.promptTokens",
    "ai.usage.inputTokens",
  );
  const output = attrs.count(
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "llm.usage.completion_tokens",
    "ai.usage.completionTokens",
    "ai.usage.outputTokens",
  );
  const total = attrs.count("gen_ai.usage.total_tokens", "llm.token_count.total", "llm.usage.total_tokens");
  if (input !== undefined) usage.input_tokens ??= input;
  if (output !== undefined) usage.output_tokens ??= output;
  if (total !== undefined) usage.total_tokens ??= total;
  else if (usage.total_tokens === undefined && (input !== undefined || output !== undefined))
    usage.total_tokens = (input ?? 0) + (output ?? 0);
  return Object.keys(usage).length > 0 ? usage : undefined;
}

function readInputs(attrs: AttributeReader, events: readonly EventInput[], consumed: Set<EventInput>) {
  const langsmith = attrs.json("gen_ai.prompt");
  if (langsmith !== undefined) return asObject(langsmith, "input");
  const openInference = attrs.json("input.value");
  attrs.take("input.mime_type");
  if (openInference !== undefined) return asObject(openInference, "input");
  const traceloop = attrs.json("traceloop.entity.input");
  if (traceloop !== undefined) return asObject(traceloop, "input");
  const messages = attrs.json("gen_ai.input.messages");
  const system = attrs.json("gen_ai.system_instructions");
  if (messages !== undefined)
    return { messages, ...(system === undefined ? {} : { system_instructions: system }) };
  const indexed =
    attrs.takeIndexed("gen_ai.prompt") ?? unwrapMessages(attrs.takeIndexed("llm.input_messages"));
  if (indexed) return { messages: indexed };
  const toolArgs = attrs.json("gen_ai.tool.call.arguments", "ai.toolCall.args", "ai.toolCall.input");
  if (toolArgs !== undefined) return asObject(toolArgs, "input");
  const fromEvents = events.filter((event) => MESSAGE_EVENTS[event.name] !== undefined);
  if (fromEvents.length > 0) {
    for (const event of fromEvents) consumed.add(event);
    return {
      messages: fromEvents.map((event) => ({
        role: MESSAGE_EVENTS[event.name] as string,
        ...Object.fromEntries(event.attributes),
      })),
    };
  }
  const vercel = attrs.json("ai.prompt.messages", "ai.prompt");
  return vercel === undefined ? null : asObject(vercel, "input");
}

function readOutputs(attrs: AttributeReader, events: readonly EventInput[], consumed: Set<EventInput>) {
  const langsmith = attrs.json("gen_ai.completion");
  if (langsmith !== undefined) return asObject(langsmith, "output");
  const openInference = attrs.json("output.value");
  attrs.take("output.mime_type");
  if (openInference !== undefined) return asObject(openInference, "output");
  const traceloop = attrs.json("traceloop.entity.output");
  if (traceloop !== undefined) return asObject(traceloop, "output");
  const messages = attrs.json("gen_ai.output.messages");
  if (messages !== undefined) return { messages };
  const indexed =
    attrs.takeIndexed("gen_ai.completion") ?? unwrapMessages(attrs.takeIndexed("llm.output_messages"));
  if (indexed) return { messages: indexed };
  const toolResult = attrs.json("gen_ai.tool.call.result", "ai.toolCall.result", "ai.toolCall.output");
  if (toolResult !== undefined) return asObject(toolResult, "output");
  const choices = events.filter((event) => event.name === "gen_ai.choice");
  if (choices.length > 0) {
    for (const event of choices) consumed.add(event);
    return { choices: choices.map((event) => Object.fromEntries(event.attributes)) };
  }
  const vercel = attrs.json(
    "ai.response.object",
    "ai.response.text",
    "ai.response.toolCalls",
    "ai.response.choices",
  );
  return vercel === undefined ? null : asObject(vercel, "output");
}

/** OpenInference's `llm.*_messages.N.message.*` items without their `message` level. */
function unwrapMessages(items: AttributeValue[] | undefined): AttributeValue[] | undefined {
  return items?.map((item) =>
    typeof item === "object" && item !== null && !Array.isArray(item) && item.message !== undefined
      ? item.message
      : item,
  );
}

function readTags(attrs: AttributeReader): string[] {
  const tags: string[] = [];
  for (const value of [attrs.take("langsmith.span.tags"), attrs.take("tag.tags")]) {
    if (typeof value === "string")
      tags.push(
        ...value
          .split(",")
          .map((tag) => tag.trim())
          .filter(Boolean),
      );
    else if (Array.isArray(value))
      tags.push(...value.filter((tag): tag is string => typeof tag === "string"));
  }
  return [...new Set(tags)];
}
