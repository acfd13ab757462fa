import type { Sql } from "../../server/store/db.js";

/**
 * Inserts assistant `assistantId` of graph `g` into `workspaceId` as the store tests need it: the
 * row alone, with `config` as its config (none by default), at version 1.
 */
export async function insertTestAssistant(
  sql: Sql,
  workspaceId: string,
  assistantId: string,
  config: Record<string, unknown> = {},
): Promise<void> {
  await sql`
    insert into assistants (workspace_id, assistant_id, graph_id, name, config, context, metadata, version)
    values (${workspaceId}, ${assistantId}, 'g', 'g', ${JSON.stringify(config)}::jsonb, '{}', '{}', 1)`;
}
