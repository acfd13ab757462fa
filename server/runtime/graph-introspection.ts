import type { JsonObject } from "@bufbuild/protobuf";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  getConfigTypeSchema,
  getInputTypeSchema,
  getOutputTypeSchema,
  getStateTypeSchema,
} from "@langchain/langgraph/zod/schema";
import type { CompiledGraph } from "./graph-registry.js";

/** JSON Schemas of a graph; a key is absent when that schema cannot be derived. */
export interface GraphSchemas {
  input_schema?: JsonObject;
  output_schema?: JsonObject;
  state_schema?: JsonObject;
  config_schema?: JsonObject;
  context_schema?: JsonObject;
}

/**
 * The drawable graph `{nodes, edges}` (LangChain's `Graph.toJSON()`), with subgraphs expanded when
 * `xray` is true or, for a number, down to that depth.
 */
export async function drawGraph(graph: CompiledGraph, xray: boolean | number): Promise<JsonObject> {
  // Pregel declares a plain RunnableConfig; CompiledStateGraph (what it is at run time) reads `xray`.
  const drawable = await graph.getGraphAsync({ xray } as RunnableConfig);
  return toPlainJson(drawable.toJSON());
}

/**
 * The graph's JSON Schemas, from the zod or StateSchema definitions @langchain/langgraph keeps on
 * the builder (`@langchain/langgraph/zod/schema`). Graphs whose state is an `Annotation` carry no
 * runtime type information, so they get no schemas (the OAS: "missing if unable to generate");
 * the context schema is the config schema, as in the LangGraph JS server.
 */
export function graphSchemas(graph: CompiledGraph): GraphSchemas {
  const schemas: GraphSchemas = {};
  const put = (key: keyof GraphSchemas, derive: (g: unknown) => unknown) => {
    let schema: unknown;
    try {
      schema = derive(graph);
    } catch {
      // A schema the library cannot convert (e.g. a zod type without a JSON form) is left out.
      return;
    }
    if (typeof schema === "object" && schema !== null) schemas[key] = toPlainJson(schema);
  };
  put("input_schema", getInputTypeSchema);
  put("output_schema", getOutputTypeSchema);
  put("state_schema", getStateTypeSchema);
  put("config_schema", getConfigTypeSchema);
  if (schemas.config_schema) schemas.context_schema = schemas.config_schema;
  return schemas;
}

/**
 * Schemas of the graph's subgraphs by namespace (`parent|child` when nested). With `namespace`,
 * only that subgraph (and, with `recurse`, those below it).
 */
export async function subgraphSchemas(
  graph: CompiledGraph,
  namespace: string | undefined,
  recurse: boolean,
): Promise<Record<string, GraphSchemas>> {
  const result: Record<string, GraphSchemas> = {};
  for await (const [ns, subgraph] of graph.getSubgraphsAsync(namespace, recurse)) {
    result[ns] = graphSchemas(subgraph as CompiledGraph);
  }
  return result;
}

/** Drops what JSON cannot hold (functions, undefined, class instances become plain objects). */
function toPlainJson(value: unknown): JsonObject {
  return JSON.parse(JSON.stringify(value)) as JsonObject;
}
