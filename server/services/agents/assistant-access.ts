import type { AssistantVisibility } from "../../store/assistant-store.js";
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
 * System assistants (one per graph, made by the server, with no owner in their metadata) are
 * shared for reading: `assistants:read` and `assistants:search` see them whatever the filter says,
 * so every user can read a graph's assistant, its schemas and graph, and run the graph by its id.
 * They are recognised by their id (uuid5 of a served graph id), never by metadata, which users
 * write. Writes (`create`, `update`, `delete`) apply the filter as it is: a filtered user cannot
 * change or delete a system assistant unless the filter matches its metadata
 * (`created_by: "system"`).
 */
export async function assistantVisibility(
  principal: Principal,
  systemAssistants: SystemAssistants,
  event: AssistantEvent,
  value: Record<string, unknown>,
): Promise<AssistantVisibility | undefined> {
  const filter = await authorizeEvent(principal, event, value);
  if (!filter) return undefined;
  const shared = event === "assistants:read" || event === "assistants:search";
  return { filter, sharedIds: shared ? systemAssistants.ids() : [] };
}
