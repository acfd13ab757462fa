/**
 * The protocol's `messages` events for a graph whose LangGraph predates them: its `messages`
 * stream mode yields message chunks (`[chunk, metadata]`, a chat model's streamed pieces, or a
 * whole message from a model that does not stream), which become the content-block lifecycle the
 * protocol defines and clients assemble: `message-start`, then per block `content-block-start`,
 * `content-block-delta` (text, or a tool call's argument slices), `content-block-finish`, and
 * `message-finish`. A message is finished when its node reports its update (or the run ends):
 * chunks carry no end of their own.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { toPlainJson } from "../plain-json.js";

/** A protocol `messages` event's data, with the node and namespace it belongs to. */
export interface LegacyMessageEvent {
  namespace: readonly string[];
  node: string | undefined;
  data: JsonObject;
}

interface OpenBlock {
  /** text, or tool_call_chunk. */
  type: "text" | "tool_call_chunk";
  text: string;
  args: string;
  id: string | null;
  name: string | null;
}

interface OpenMessage {
  namespace: readonly string[];
  node: string | undefined;
  id: string;
  blocks: OpenBlock[];
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The text of a chunk's content: a string, or the text of its text blocks. */
function textOf(content: JsonValue | undefined): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((b) => (isObject(b) && typeof b.text === "string" ? b.text : typeof b === "string" ? b : ""))
    .join("");
}

/** Converts one run's message chunks (see the module comment). */
export function createLegacyMessages(emit: (event: LegacyMessageEvent) => void) {
  const open = new Map<string, OpenMessage>();

  const send = (message: OpenMessage, data: JsonObject) =>
    emit({ namespace: message.namespace, node: message.node, data: { ...data } });

  const finish = (key: string, message: OpenMessage): void => {
    message.blocks.forEach((block, index) => {
      const content: JsonObject =
        block.type === "text"
          ? { type: "text", text: block.text }
          : { type: "tool_call", id: block.id, name: block.name ?? "", args: parseArgs(block.args) };
      send(message, { event: "content-block-finish", index, content });
    });
    send(message, { event: "message-finish" });
    open.delete(key);
  };

  return {
    /** Takes a `messages` chunk: the message (chunk) and the node that produced it. */
    chunk(namespace: readonly string[], node: string | undefined, raw: unknown): void {
      const chunk = toPlainJson(raw);
      if (!isObject(chunk)) return;
      const type = typeof chunk.type === "string" ? chunk.type : "";
      // Only what a model writes streams as a transcript message.
      if (!/^ai|AIMessage/i.test(type)) return;
      const id = typeof chunk.id === "string" ? chunk.id : `${namespace.join("|")}:${node ?? ""}`;
      const key = `${namespace.join("\u0000")}\u0000${id}`;
      let message = open.get(key);
      if (!message) {
        message = { namespace, node, id, blocks: [] };
        open.set(key, message);
        send(message, { event: "message-start", role: "ai", id });
      }
      const text = textOf(chunk.content);
      if (text !== "") {
        let index = message.blocks.findIndex((b) => b.type === "text");
        if (index < 0) {
          index = message.blocks.push({ type: "text", text: "", args: "", id: null, name: null }) - 1;
          send(message, { event: "content-block-start", index, content: { type: "text", text: "" } });
        }
        const block = message.blocks[index] as OpenBlock;
        block.text += text;
        send(message, { event: "content-block-delta", index, delta: { type: "text-delta", text } });
      }
      const calls = Array.isArray(chunk.tool_call_chunks) ? chunk.tool_call_chunks : [];
      for (const call of calls) {
        if (!isObject(call)) continue;
        const slot = typeof call.index === "number" ? call.index : 0;
        const callId = typeof call.id === "string" ? call.id : null;
        let index = message.blocks.findIndex(
          (b, i) => b.type === "tool_call_chunk" && (callId !== null ? b.id === callId : i === slot + 1),
        );
        if (index < 0) {
          index =
            message.blocks.push({
              type: "tool_call_chunk",
              text: "",
              args: "",
              id: callId,
              name: typeof call.name === "string" ? call.name : null,
            }) - 1;
          send(message, {
            event: "content-block-start",
            index,
            content: {
              type: "tool_call_chunk",
              id: callId,
              name: typeof call.name === "string" ? call.name : null,
              args: "",
            },
          });
        }
        const args = typeof call.args === "string" ? call.args : "";
        if (args !== "") {
          (message.blocks[index] as OpenBlock).args += args;
          send(message, { event: "content-block-delta", index, delta: { type: "tool-call-delta", args } });
        }
      }
    },

    /** A node reported its update: the messages it was streaming are complete. */
    nodeDone(namespace: readonly string[], node: string | undefined): void {
      for (const [key, message] of open)
        if (message.node === node && message.namespace.join("\u0000") === namespace.join("\u0000"))
          finish(key, message);
    },

    /** The run ended: whatever is still open is complete. */
    end(): void {
      for (const [key, message] of open) finish(key, message);
    },
  };
}

/** A tool call's accumulated argument text as an object (empty when it is not JSON). */
function parseArgs(text: string): JsonObject {
  try {
    const parsed = JSON.parse(text === "" ? "{}" : text) as JsonValue;
    return isObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}
