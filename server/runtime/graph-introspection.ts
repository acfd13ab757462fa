import type { JsonObject } from "@bufbuild/protobuf";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { CompiledGraph, RegisteredGraph } from "./graph-registry.js";
import { channelGraphSchemas, runtimeGraphSchemas } from "./graph-runtime-schemas.js";
import { plainSchema, type SchemaSet } from "./graph-schema-set.js";
import type { StaticGraphSchemas } from "./graph-static-schemas.js";

/** JSON Schemas of a graph as the API names them; a key is absent when that schema cannot be derived. */
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
  return plainSchema(drawable.toJSON()) ?? {};
}

/**
 * The schemas of `graph` (a load of `registered`): from its runtime definitions when they describe
 * its state (zod, `StateSchema`), else from its TypeScript types (an `Annotation` state, the
 * functional API), as the LangGraph JS server derives them; a runtime (zod) config schema is kept
 * beside types-derived state schemas. The context schema is the config schema, as there.
 */
export async function graphSchemas(registered: RegisteredGraph, graph: CompiledGraph): Promise<GraphSchemas> {
  const fromRuntime = await runtimeGraphSchemas(graph, registered.file);
  if (describesState(fromRuntime)) return toGraphSchemas(fromRuntime);
  const fromTypes = (await registered.staticSchemas())?.[registered.exportName];
  return toGraphSchemas(withChannels(graph, { ...fromTypes, ...fromRuntime }));
}

/**
 * `set`, or, when it does not describe the state (a plain JavaScript module has no types to read),
 * the schemas of the state's channels with what `set` has (a zod config schema).
 */
function withChannels(graph: CompiledGraph, set: SchemaSet): SchemaSet {
  if (describesState(set)) return set;
  return { ...channelGraphSchemas(graph), ...set };
}

/**
 * Schemas of the subgraphs of `graph` (a load of `registered`) by namespace (`parent|child` when
 * nested). With `namespace`, only that subgraph (and, with `recurse`, those below it). A subgraph
 * whose schemas cannot be derived has none, rather than its parent's.
 */
export async function subgraphSchemas(
  registered: RegisteredGraph,
  graph: CompiledGraph,
  namespace: string | undefined,
  recurse: boolean,
): Promise<Record<string, GraphSchemas>> {
  const result: Record<string, GraphSchemas> = {};
  let fromTypes: Promise<StaticGraphSchemas | undefined> | undefined;
  for await (const [ns, subgraph] of graph.getSubgraphsAsync(namespace, recurse)) {
    const fromRuntime = await runtimeGraphSchemas(subgraph as CompiledGraph, registered.file);
    if (describesState(fromRuntime)) {
      result[ns] = toGraphSchemas(fromRuntime);
      continue;
    }
    fromTypes ??= registered.staticSchemas();
    const typed = (await fromTypes)?.[`${registered.exportName}|${ns}`];
    result[ns] = toGraphSchemas(withChannels(subgraph as CompiledGraph, { ...typed, ...fromRuntime }));
  }
  return result;
}

/** Whether runtime schemas cover the state (else the types are read for it). */
function describesState(set: SchemaSet | undefined): boolean {
  return Boolean(set?.state ?? set?.input ?? set?.output);
}

function toGraphSchemas(set: SchemaSet | undefined): GraphSchemas {
  const schemas: GraphSchemas = {};
  if (set?.input) schemas.input_schema = set.input;
  if (set?.output) schemas.output_schema = set.output;
  if (set?.state) schemas.state_schema = set.state;
  if (set?.config) {
    schemas.config_schema = set.config;
    schemas.context_schema = set.config;
  }
  return schemas;
}
