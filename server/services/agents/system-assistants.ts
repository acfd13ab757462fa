import type { GraphRegistry, RegisteredGraph } from "../../runtime/graph-registry.js";
import { systemAssistantId } from "../../runtime/system-assistant-id.js";
import {
  insertAssistant,
  insertAssistantVersion,
  lockAssistant,
} from "../../store/agents/assistant-store.js";
import { appliedDefaultsMatch, recordAppliedDefaults } from "../../store/agents/system-assistant-store.js";
import type { Sql, Transaction } from "../../store/db.js";

/**
 * Makes sure a workspace has the system assistant of every registered graph (id
 * uuid5(graph_id), name = graph id, `metadata.created_by = "system"`, config and context from
 * `LANGGRAPH_CONFIG`).
 *
 * When: lazily, on a workspace's first assistants (or runs) call in each process. Creating them
 * at start for every workspace would write N×graphs rows on every start-up and miss workspaces
 * created later; creating them with the workspace would miss graphs added to the config later and
 * couple IAM to the graph config. Lazily-per-process gives the reference servers' semantics (the
 * system assistants exist whenever a client looks, and one deleted by a user comes back at the
 * next start, as with the servers that create them at start-up) at one cheap transaction per graph
 * per workspace per process.
 *
 * `LANGGRAPH_CONFIG` changes: the reference servers create system assistants with
 * `if_exists: do_nothing`, so a changed value never reaches an existing one. Here the settings last
 * applied are recorded; when a process finds that `LANGGRAPH_CONFIG` gives a graph other settings,
 * the system assistant gets a new version with them (the old one stays in its history). While the
 * value is unchanged, edits a user made to a system assistant are kept.
 */
export interface SystemAssistants {
  /** Creates the workspace's missing system assistants (once per workspace in this process). */
  ensure(workspaceId: string): Promise<void>;
  /** The assistant id a graph id stands for, or undefined when no graph has that id. */
  idOfGraph(graphId: string): string | undefined;
  /** The ids of every served graph's system assistant. */
  ids(): string[];
}

/** Creates the {@link SystemAssistants} of a process. */
export function createSystemAssistants(deps: { sql: Sql; graphs: GraphRegistry }): SystemAssistants {
  const { sql, graphs } = deps;
  // Workspace id → its ensure call; a failed call is forgotten so the next request retries it.
  // One entry per workspace this process served: workspaces number in the thousands at most.
  const done = new Map<string, Promise<void>>();

  const create = async (workspaceId: string): Promise<void> => {
    for (const graphId of graphs.ids()) {
      const graph = graphs.get(graphId);
      if (graph) await sql.begin((tx) => ensureOne(tx, workspaceId, graph));
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
    ids: () => graphs.ids().map(systemAssistantId),
  };
}

/** Creates one system assistant, or gives it the graph's defaults if they changed since last applied. */
async function ensureOne(tx: Transaction, workspaceId: string, graph: RegisteredGraph): Promise<void> {
  const assistantId = systemAssistantId(graph.graphId);
  const defaults = graph.assistantDefaults;
  const created = await insertAssistant(tx, workspaceId, assistantId, {
    graphId: graph.graphId,
    name: graph.graphId,
    description: graph.description ?? null,
    config: defaults.config,
    context: defaults.context,
    metadata: { created_by: "system" },
  });
  if (created) {
    await recordAppliedDefaults(tx, workspaceId, assistantId, defaults);
    return;
  }
  // Locked first, so that of two processes applying the same change only one writes a version.
  const current = await lockAssistant(tx, workspaceId, assistantId);
  if (!current) return;
  const same = await appliedDefaultsMatch(tx, workspaceId, assistantId, defaults);
  // Nothing recorded: the assistant was made with an empty config and context.
  const unchanged =
    same ?? (Object.keys(defaults.config).length === 0 && Object.keys(defaults.context).length === 0);
  if (unchanged) return;
  await insertAssistantVersion(tx, workspaceId, assistantId, {
    graphId: current.graphId,
    name: current.name,
    description: current.description,
    config: defaults.config,
    context: defaults.context,
    metadata: current.metadata,
  });
  await recordAppliedDefaults(tx, workspaceId, assistantId, defaults);
}
