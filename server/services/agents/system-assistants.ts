import type { GraphRegistry } from "../../runtime/graph-registry.js";
import { systemAssistantId } from "../../runtime/system-assistant-id.js";
import { insertAssistant } from "../../store/assistant-store.js";
import type { Queryable } from "../../store/db.js";

/**
 * Makes sure a workspace has the system assistant of every registered graph (id
 * uuid5(graph_id), name = graph id, `metadata.created_by = "system"`, empty config).
 *
 * When: lazily, on a workspace's first assistants (or runs) call in each process. Creating them
 * at start for every workspace would write N×graphs rows on every start-up and miss workspaces
 * created later; creating them with the workspace would miss graphs added to the config later and
 * couple IAM to the graph config. Lazily-per-process gives the reference servers' semantics (the
 * system assistants exist whenever a client looks, and one deleted by a user comes back at the
 * next start, as with the servers that create them at start-up) at one cheap
 * `insert … on conflict do nothing` per graph per workspace per process.
 */
export interface SystemAssistants {
  /** Creates the workspace's missing system assistants (once per workspace in this process). */
  ensure(workspaceId: string): Promise<void>;
  /** The assistant id a graph id stands for, or undefined when no graph has that id. */
  idOfGraph(graphId: string): string | undefined;
}

/** Creates the {@link SystemAssistants} of a process. */
export function createSystemAssistants(deps: { sql: Queryable; graphs: GraphRegistry }): SystemAssistants {
  const { sql, graphs } = deps;
  // Workspace id → its ensure call; a failed call is forgotten so the next request retries it.
  // One entry per workspace this process served: workspaces number in the thousands at most.
  const done = new Map<string, Promise<void>>();

  const create = async (workspaceId: string): Promise<void> => {
    for (const graphId of graphs.ids()) {
      await insertAssistant(sql, workspaceId, systemAssistantId(graphId), {
        graphId,
        name: graphId,
        description: graphs.get(graphId)?.description ?? null,
        config: {},
        context: {},
        metadata: { created_by: "system" },
      });
    }
  };

  return {
    ensure(workspaceId) {
      let pending = done.get(workspaceId);
      if (!pending) {
        pending = create(workspaceId).catch((error: unknown) => {
          done.delete(workspaceId);
          throw error;
        });
        done.set(workspaceId, pending);
      }
      return pending;
    },
    idOfGraph: (graphId) => (graphs.get(graphId) ? systemAssistantId(graphId) : undefined),
  };
}
