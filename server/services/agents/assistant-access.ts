import type { AssistantVisibility } from "../../store/agents/assistant-store.js";
import { authorizeEvent, type Principal } from "../iam/principal.js";
import type { SystemAssistants } from "./system-assistants.js";

/** Custom auth events of assistants (`@langchain/langgraph-sdk/auth`). */
export type AssistantEvent =
  | "assistants:create"
  | "assistants:read"
  | "assistants:update"
  | "assistants:delete"
  | "assistants:search";

/**
 * Which assistants `principal` may reach for `event`, after its custom auth handler saw `value`
 * (and maybe changed it): undefined when every assistant (no handler, no filter, API keys); the
 * handler's refusal as it answers.
 *
 * A filter applies to every assistant, system assistants (one per graph, made by the server, with
 * no owner in their metadata) included, as on the LangGraph JS server: a user whose filter they
 * fail does not find them in search, count or get. Running a graph is another path: with
 * `toRun`, an `assistants:read` sees the system assistants whatever the filter says, so every
 * user still runs each graph by its graph id (or its system assistant's id) — runs, crons, A2A,
 * MCP calls and generative UI. They are recognised by their id (uuid5 of a served graph id),
 * never by metadata, which users write.
 */
export async function assistantVisibility(
  principal: Principal,
  systemAssistants: SystemAssistants,
  event: AssistantEvent,
  value: Record<string, unknown>,
  toRun = false,
): Promise<AssistantVisibility | undefined> {
  const filter = await authorizeEvent(principal, event, value);
  if (!filter) return undefined;
  const shared = toRun && event === "assistants:read";
  return { filter, sharedIds: shared ? systemAssistants.ids() : [] };
}
