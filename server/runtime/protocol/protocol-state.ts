/**
 * Graph state as the protocol's `values` and `updates` events carry it: the state's plain JSON
 * (see plain-json.ts) with each LangChain message reduced to the fields a transcript needs, in the
 * protocol's vocabulary: `type` (`ai`, `human`, `system`, `tool`, `remove`), `content` (a string,
 * or content blocks), `id`, `name`, and per type `tool_calls` / `invalid_tool_calls`,
 * `tool_call_id` / `status` / `artifact`, `response_metadata` when it holds anything. The
 * interrupt marker `__interrupt__` is left out: interrupts travel as `input.requested` events.
 * This is the shape the JS reference server gives these events, which `@langchain/react` renders.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** Message `type`s of LangChain's serialised messages (and the OpenAI-style role aliases). */
const MESSAGE_TYPES = new Set(["human", "user", "ai", "assistant", "system", "tool", "function", "remove"]);

/** Content block types the protocol defines; any other block becomes a `non_standard` one. */
const CONTENT_BLOCK_TYPES = new Set([
  "text",
  "reasoning",
  "tool_call",
  "tool_call_chunk",
  "invalid_tool_call",
  "server_tool_call",
  "server_tool_call_chunk",
  "server_tool_call_result",
  "image",
  "audio",
  "video",
  "file",
  "non_standard",
]);

/** The key LangGraph adds to a `values` chunk when the run stopped on interrupts. */
export const INTERRUPT_KEY = "__interrupt__";

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `assistant` and `user` (role names) as the message types they stand for. */
function messageType(raw: JsonValue | undefined): string | undefined {
  if (raw === "assistant") return "ai";
  if (raw === "user") return "human";
  return typeof raw === "string" ? raw : undefined;
}

function isMessage(value: JsonValue): value is JsonObject {
  return isObject(value) && MESSAGE_TYPES.has(messageType(value.type) ?? "");
}

/** One content block in the protocol's vocabulary; undefined for what is not a block. */
function contentBlock(block: JsonValue): JsonValue | undefined {
  if (typeof block === "string") return { type: "text", text: block };
  if (!isObject(block) || typeof block.type !== "string") return undefined;
  if (CONTENT_BLOCK_TYPES.has(block.type)) {
    // Media blocks name their type `mime_type` in the protocol; LangChain's camelCase is renamed.
    const { mimeType, ...rest } = block;
    return typeof mimeType === "string" && rest.mime_type === undefined
      ? { ...rest, mime_type: mimeType }
      : block;
  }
  if (block.type === "image_url") {
    const image = block.image_url;
    const url = typeof image === "string" ? image : isObject(image) ? image.url : undefined;
    return typeof url === "string" ? { type: "image", url } : undefined;
  }
  return { type: "non_standard", value: block };
}

function content(raw: JsonValue | undefined): JsonValue {
  if (raw === undefined || raw === null) return "";
  if (!Array.isArray(raw)) return raw;
  const blocks = raw.map(contentBlock).filter((b): b is JsonValue => b !== undefined);
  return blocks.length > 0 ? blocks : raw;
}

/** A tool call as `{id, name, args, type: "tool_call"}`; args that are text are parsed. */
function toolCalls(raw: JsonValue | undefined): { valid: JsonObject[]; invalid: JsonObject[] } {
  const valid: JsonObject[] = [];
  const invalid: JsonObject[] = [];
  if (!Array.isArray(raw)) return { valid, invalid };
  for (const call of raw) {
    if (!isObject(call)) continue;
    // OpenAI's form nests the name and arguments under `function`.
    const fn = isObject(call.function) ? call.function : undefined;
    const id = typeof call.id === "string" ? call.id : undefined;
    const name =
      typeof call.name === "string" ? call.name : typeof fn?.name === "string" ? fn.name : undefined;
    const rawArgs = call.args ?? fn?.arguments;
    let args: JsonValue | undefined = rawArgs;
    if (typeof rawArgs === "string") {
      try {
        args = rawArgs.trim() === "" ? {} : (JSON.parse(rawArgs) as JsonValue);
      } catch {
        args = undefined;
      }
    }
    const base = { ...(id !== undefined ? { id } : {}) };
    if (name === undefined)
      invalid.push({ ...base, error: "Incomplete tool call.", type: "invalid_tool_call" });
    else if (!isObject(args ?? {}))
      invalid.push({
        ...base,
        name,
        ...(typeof rawArgs === "string" ? { args: rawArgs } : {}),
        error: "Malformed args.",
        type: "invalid_tool_call",
      });
    else valid.push({ ...base, name, args: (args ?? {}) as JsonObject, type: "tool_call" });
  }
  return { valid, invalid };
}

/** One message in the protocol's shape (see the module comment). */
export function protocolMessage(message: JsonObject): JsonObject {
  const type = messageType(message.type);
  if (type === undefined) return message;
  const out: JsonObject = { type, content: content(message.content) };
  if (typeof message.id === "string") out.id = message.id;
  if (typeof message.name === "string") out.name = message.name;
  // Human-in-the-loop cards ride on response_metadata: kept whenever it holds something.
  if (isObject(message.response_metadata) && Object.keys(message.response_metadata).length > 0)
    out.response_metadata = message.response_metadata;
  if ((type === "ai" || type === "human") && typeof message.example === "boolean")
    out.example = message.example;
  if (type === "tool") {
    if (typeof message.tool_call_id === "string") out.tool_call_id = message.tool_call_id;
    if (message.status === "success" || message.status === "error") out.status = message.status;
    if ("artifact" in message) out.artifact = message.artifact ?? null;
  }
  if (type === "ai") {
    const kwargs = isObject(message.additional_kwargs) ? message.additional_kwargs : undefined;
    const raw =
      Array.isArray(message.tool_calls) && message.tool_calls.length > 0
        ? message.tool_calls
        : kwargs?.tool_calls;
    const calls = toolCalls(raw);
    if (calls.valid.length > 0) out.tool_calls = calls.valid;
    const invalid =
      Array.isArray(message.invalid_tool_calls) && message.invalid_tool_calls.length > 0
        ? message.invalid_tool_calls
        : calls.invalid;
    if (invalid.length > 0) out.invalid_tool_calls = invalid;
  }
  return out;
}

/** State (or a state update) in the protocol's shape: messages reduced, interrupts left out. */
export function protocolState(value: JsonValue): JsonValue {
  if (Array.isArray(value))
    return value.map((item) => (isMessage(item) ? protocolMessage(item) : protocolState(item)));
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, entry] of Object.entries(value)) {
    if (key === INTERRUPT_KEY || entry === undefined) continue;
    out[key] = isMessage(entry) ? protocolMessage(entry) : protocolState(entry);
  }
  return out;
}
