/**
 * Carries out the streaming protocol's commands on a thread, for both of its transports: the
 * `POST /threads/{id}/commands` RPC and the WebSocket. A command is `{id, method, params}`; its
 * answer is `{type: "success", id, result, meta}` or `{type: "error", id, error, message, meta}`.
 * `meta.applied_through_seq` is 0: a command's effects begin at the `running` lifecycle event of
 * the run it started (its `event_id` names the run), the barrier `@langchain/langgraph-sdk` finds
 * on the stream when a server answers 0, as the Agent Server does over HTTP.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { Logger } from "../../../logger.js";
import { requireUuid } from "../../request-validation.js";
import { type ProtocolErrorCode, protocolErrorOf } from "./protocol-errors.js";
import { paramsOf } from "./protocol-params.js";
import { createRunCommands, type RunCommandDeps } from "./run-commands.js";
import { createStateCommands, type StateCommandDeps } from "./state-commands.js";

/** A command as a transport received it. */
export interface ThreadCommand {
  id: number | null;
  method: string;
  params: JsonObject;
}

/** A command's answer. */
export type ThreadCommandAnswer =
  | { type: "success"; id: number | null; result: JsonObject; meta: JsonObject }
  | { type: "error"; id: number | null; error: ProtocolErrorCode; message: string; meta: JsonObject };

/** What the commands need. */
export interface ThreadCommandDeps extends RunCommandDeps, StateCommandDeps {
  log: Logger;
}

/** Commands that only a WebSocket carries (an HTTP event stream's body is its subscription). */
const SOCKET_COMMANDS = new Set([
  "subscription.subscribe",
  "subscription.unsubscribe",
  "subscription.reconnect",
]);

/** Creates the command dispatcher. */
export function createThreadCommands(deps: ThreadCommandDeps) {
  const runs = createRunCommands(deps);
  const state = createStateCommands(deps);
  const handlers: Record<
    string,
    (
      scope: { ctx: HandlerContext; threadId: string },
      params: ReturnType<typeof paramsOf>,
    ) => Promise<JsonObject>
  > = {
    "run.start": runs.start,
    "input.respond": runs.respond,
    "input.inject": runs.inject,
    "state.fork": runs.fork,
    "state.get": state.get,
    "state.listCheckpoints": state.listCheckpoints,
    "agent.getTree": state.getTree,
  };

  return {
    /**
     * Carries out `command` on thread `rawThreadId` (a UUID, checked first: a bad one fails the
     * request as a whole). Refusals are answers; only a request without valid credentials throws.
     */
    async handle(
      ctx: HandlerContext,
      rawThreadId: string,
      command: ThreadCommand,
    ): Promise<ThreadCommandAnswer> {
      const threadId = requireUuid(rawThreadId, "thread_id");
      const meta: JsonObject = { thread_id: threadId, applied_through_seq: 0 };
      const fail = (error: ProtocolErrorCode, message: string): ThreadCommandAnswer => ({
        type: "error",
        id: command.id,
        error,
        message,
        meta,
      });
      const handler = handlers[command.method];
      if (!handler) {
        if (SOCKET_COMMANDS.has(command.method))
          return fail(
            "not_supported",
            `${command.method} is a WebSocket command; over HTTP, open POST /threads/${threadId}/stream/events with the channels, namespaces and depth to receive`,
          );
        return fail(
          "unknown_command",
          `unknown command ${JSON.stringify(command.method)}; commands: ${Object.keys(handlers).join(", ")}`,
        );
      }
      try {
        const result = await handler({ ctx, threadId }, paramsOf(command.method, command.params));
        return { type: "success", id: command.id, result, meta };
      } catch (error) {
        const answer = protocolErrorOf(error);
        if (!answer) throw error;
        if (answer.code === "unknown_error")
          deps.log.error("protocol command failed", { threadId, method: command.method, error });
        return fail(answer.code, answer.message);
      }
    },
  };
}

/** A command from a JSON envelope; a problem naming what to fix when it is not one. */
export function commandOf(envelope: JsonValue): ThreadCommand | { problem: string } {
  if (typeof envelope !== "object" || envelope === null || Array.isArray(envelope))
    return { problem: "a protocol command is a JSON object {id, method, params}" };
  const { id, method, params } = envelope;
  if (typeof id !== "number" || !Number.isInteger(id) || id < 0)
    return { problem: "a protocol command needs id: a whole number of 0 or more" };
  if (typeof method !== "string" || method === "")
    return { problem: "a protocol command needs method: a string" };
  if (params !== undefined && params !== null && (typeof params !== "object" || Array.isArray(params)))
    return { problem: "a protocol command's params must be a JSON object" };
  return { id, method, params: (params ?? {}) as JsonObject };
}
