import type { JsonObject } from "@bufbuild/protobuf";
import { graphSchemas } from "../../runtime/graph-introspection.js";
import type { GraphRegistry } from "../../runtime/graph-registry.js";
import type { AssistantRecord } from "../../store/agents/assistant-store.js";

/** The input schemas of assistants' graphs, derived once per graph and process. */
export interface AssistantInputSchemas {
  /** The JSON Schema of the assistant's graph input; undefined when it cannot be derived. */
  of(assistant: AssistantRecord): Promise<JsonObject | undefined>;
}

/**
 * Derives graph input schemas as `GET /assistants/{id}/schemas` does, and keeps them per graph: a
 * graph's input does not change while the process runs. A failed derivation is not kept.
 */
export function createAssistantInputSchemas(graphs: GraphRegistry): AssistantInputSchemas {
  const byGraph = new Map<string, Promise<JsonObject | undefined>>();
  return {
    of(assistant) {
      const registered = graphs.get(assistant.graphId);
      if (!registered) return Promise.resolve(undefined);
      let schema = byGraph.get(assistant.graphId);
      if (!schema) {
        schema = (async () => {
          const graph = await registered.load({
            config: { ...assistant.config, configurable: { ...assistant.context } },
          });
          return (await graphSchemas(registered, graph)).input_schema;
        })();
        schema.catch(() => byGraph.delete(assistant.graphId));
        byGraph.set(assistant.graphId, schema);
      }
      return schema;
    },
  };
}

/** Whether an input schema declares a `messages` property; true when the schema is unknown. */
export function acceptsMessages(schema: JsonObject | undefined): boolean {
  if (!schema) return true;
  const properties = schema.properties;
  if (typeof properties !== "object" || properties === null || Array.isArray(properties)) return true;
  return "messages" in properties;
}
