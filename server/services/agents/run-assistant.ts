import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../../ids.js";
import { type AssistantRecord, findAssistant } from "../../store/agents/assistant-store.js";
import type { Queryable } from "../../store/db.js";
import type { Principal } from "../iam/principal.js";
import { invalid } from "../request-validation.js";
import { assistantVisibility } from "./assistant-access.js";
import type { SystemAssistants } from "./system-assistants.js";

/** What finding a run's assistant needs. */
export interface RunAssistantDeps {
  systemAssistants: SystemAssistants;
  graphIds: () => string[];
}

/** Where {@link findRunAssistant} looks: the assistant's id and custom auth's visibility filter. */
export interface AssistantLookup {
  /** The assistant a request names, by id (a graph id names its system assistant). */
  id: string;
  visible: Awaited<ReturnType<typeof assistantVisibility>>;
}

/** NOT_FOUND for the assistant a request names, listing what it could name. */
export function assistantNotFound(deps: Pick<RunAssistantDeps, "graphIds">, raw: string): ConnectError {
  return new ConnectError(
    `assistant "${raw}" not found: send an assistant's UUID or a graph id (graphs: ${deps.graphIds().join(", ")})`,
    Code.NotFound,
  );
}

/**
 * Where to find the assistant `raw` names (a UUID, or a graph id for its system assistant), as
 * `principal`'s custom auth `assistants:read` handler lets it see assistants. No query once the
 * workspace's system assistants exist.
 */
export async function assistantLookup(
  deps: RunAssistantDeps,
  workspaceId: string,
  raw: string,
  principal: Principal | undefined,
): Promise<AssistantLookup> {
  await deps.systemAssistants.ensure(workspaceId);
  if (raw === "") throw invalid("assistant_id is required: a UUID or a graph id");
  const id = isUuid(raw) ? raw.toLowerCase() : deps.systemAssistants.idOfGraph(raw);
  if (!id) throw assistantNotFound(deps, raw);
  const visible = principal
    ? await assistantVisibility(
        principal,
        deps.systemAssistants,
        "assistants:read",
        { assistant_id: id },
        true,
      )
    : undefined;
  return { id, visible };
}

/**
 * FAILED_PRECONDITION (409) for an assistant of a graph this server no longer serves (the graphs
 * file changed): nothing could run it. Answers the assistant otherwise.
 */
export function servedAssistant(
  deps: Pick<RunAssistantDeps, "graphIds">,
  assistant: AssistantRecord,
): AssistantRecord {
  const served = deps.graphIds();
  if (!served.includes(assistant.graphId))
    throw new ConnectError(
      `assistant ${assistant.assistantId} uses graph "${assistant.graphId}", which this server does not serve (graphs: ${served.join(", ")})`,
      Code.FailedPrecondition,
    );
  return assistant;
}

/**
 * The assistant of `lookup`, read on `q`; NOT_FOUND (naming `raw`) when it is not there or hidden,
 * FAILED_PRECONDITION when its graph is not served ({@link servedAssistant}).
 */
export async function findRunAssistant(
  q: Queryable,
  deps: Pick<RunAssistantDeps, "graphIds">,
  workspaceId: string,
  lookup: AssistantLookup,
  raw: string,
): Promise<AssistantRecord> {
  const found = await findAssistant(q, workspaceId, lookup.id, lookup.visible);
  if (!found) throw assistantNotFound(deps, raw);
  return servedAssistant(deps, found);
}

/**
 * The assistant a request names: by UUID, or the system assistant of a graph id; NOT_FOUND
 * otherwise, and when custom auth's `assistants:read` handler hides it from `principal` (a run,
 * cron, A2A or MCP call reaches no assistant its caller cannot read; system assistants are shared).
 * FAILED_PRECONDITION (409) for an assistant of a graph this server no longer serves.
 */
export async function resolveAssistant(
  deps: RunAssistantDeps & { sql: Queryable },
  workspaceId: string,
  raw: string,
  principal: Principal,
): Promise<AssistantRecord> {
  const lookup = await assistantLookup(deps, workspaceId, raw, principal);
  return findRunAssistant(deps.sql, deps, workspaceId, lookup, raw);
}
