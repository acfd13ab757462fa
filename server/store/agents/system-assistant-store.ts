import type postgres from "postgres";
import type { Queryable } from "../db.js";
import type { JsonObject } from "./assistant-store.js";

/** A system assistant's settings from LANGGRAPH_CONFIG. */
export interface AppliedDefaults {
  config: JsonObject;
  context: JsonObject;
}

/**
 * Whether `defaults` are the settings last applied to the system assistant (compared as JSON
 * values, so key order does not matter); undefined when none were recorded (an assistant created
 * before settings were recorded, with an empty config and context).
 */
export async function appliedDefaultsMatch(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  defaults: AppliedDefaults,
): Promise<boolean | undefined> {
  const [row] = await q<{ same: boolean }[]>`
    select config = ${q.json(defaults.config as postgres.JSONValue)}
       and context = ${q.json(defaults.context as postgres.JSONValue)} as same
    from system_assistant_defaults
    where workspace_id = ${workspaceId} and assistant_id = ${assistantId}`;
  return row?.same;
}

/** Records `defaults` as the settings last applied to the system assistant. */
export async function recordAppliedDefaults(
  q: Queryable,
  workspaceId: string,
  assistantId: string,
  defaults: AppliedDefaults,
): Promise<void> {
  await q`
    insert into system_assistant_defaults (workspace_id, assistant_id, config, context)
    values (${workspaceId}, ${assistantId}, ${q.json(defaults.config as postgres.JSONValue)},
            ${q.json(defaults.context as postgres.JSONValue)})
    on conflict (workspace_id, assistant_id)
    do update set config = excluded.config, context = excluded.context`;
}
