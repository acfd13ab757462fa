import { toJsonSchema } from "@langchain/core/utils/json_schema";
import { isZodSchemaV3, isZodSchemaV4 } from "@langchain/core/utils/types";
import { importFromGraphProject } from "./graph-module-resolution.js";
import type { CompiledGraph } from "./graph-registry.js";
import { compactSchemaSet, type SchemaSet } from "./graph-schema-set.js";

/**
 * What `StateGraph` keeps of the definitions it was built from (its private fields: the graph's
 * shape is the user's, so nothing here is typed beyond "unknown").
 */
interface BuilderDefinitions {
  _schemaRuntimeDefinition?: unknown;
  _inputRuntimeDefinition?: unknown;
  _outputRuntimeDefinition?: unknown;
  _configRuntimeSchema?: unknown;
}

/** A `StateSchema` (or anything shaped like one): it describes itself as JSON Schema. */
interface StateSchemaLike {
  getJsonSchema(): unknown;
  getInputJsonSchema(): unknown;
}

/** The `zod/schema` entry of @langchain/langgraph: reads the zod registry `withLangGraph` fills. */
interface ZodRegistrySchemas {
  getUpdateTypeSchema(graph: unknown): unknown;
  getInputTypeSchema(graph: unknown): unknown;
  getOutputTypeSchema(graph: unknown): unknown;
  getConfigTypeSchema(graph: unknown): unknown;
}

/**
 * @langchain/langgraph's marker for "the input is the state, every field optional"
 * (`_inputRuntimeDefinition` when the graph declares no input schema).
 */
const PARTIAL_STATE = Symbol.for("langgraph.state.partial");

/**
 * A graph's schemas from the runtime definitions its builder keeps, in the LangGraph JS server's
 * order of preference:
 *
 * 1. a `StateSchema` describes itself (with the `jsonSchemaExtra` of its values, e.g.
 *    `MessagesValue`'s `langgraph_type: "messages"`);
 * 2. zod schemas registered with `withLangGraph`, read through the zod registry of the
 *    @langchain/langgraph copy the graph's module imported (`moduleFile` locates it: a copy of its
 *    own in the graph's project keeps its own registry), so `jsonSchemaExtra`, reducer input types
 *    and `langgraph_nodes` metadata are kept;
 * 3. any other zod schema, converted as is.
 *
 * Undefined when the graph has no such definitions (an `Annotation` state, the functional API):
 * those graphs need their TypeScript types read instead.
 */
export async function runtimeGraphSchemas(
  graph: CompiledGraph,
  moduleFile: string,
): Promise<SchemaSet | undefined> {
  const builder = (graph as { builder?: BuilderDefinitions }).builder;
  if (typeof builder !== "object" || builder === null) return undefined;
  return fromStateSchema(builder) ?? (await fromZodRegistry(graph, moduleFile)) ?? fromPlainZod(builder);
}

function fromStateSchema(builder: BuilderDefinitions): SchemaSet | undefined {
  const state = builder._schemaRuntimeDefinition;
  const input = builder._inputRuntimeDefinition;
  const output = builder._outputRuntimeDefinition;
  if (!isStateSchemaLike(state) && !isStateSchemaLike(input) && !isStateSchemaLike(output)) return undefined;
  return compactSchemaSet({
    state: isStateSchemaLike(state) ? derive(() => state.getJsonSchema()) : undefined,
    input: isStateSchemaLike(input)
      ? derive(() => input.getInputJsonSchema())
      : input === PARTIAL_STATE && isStateSchemaLike(state)
        ? derive(() => state.getInputJsonSchema())
        : undefined,
    output: isStateSchemaLike(output) ? derive(() => output.getJsonSchema()) : undefined,
    // A StateSchema graph may still take a zod context (config) schema.
    config: zodToJsonSchema(builder._configRuntimeSchema),
  });
}

async function fromZodRegistry(graph: CompiledGraph, moduleFile: string): Promise<SchemaSet | undefined> {
  let registry: ZodRegistrySchemas;
  try {
    registry = await importFromGraphProject<ZodRegistrySchemas>(
      moduleFile,
      "@langchain/langgraph/zod/schema",
    );
  } catch {
    return undefined;
  }
  // The JS server answers the update type as the state schema: what a client may send as state.
  return compactSchemaSet({
    state: derive(() => registry.getUpdateTypeSchema(graph)),
    input: derive(() => registry.getInputTypeSchema(graph)),
    output: derive(() => registry.getOutputTypeSchema(graph)),
    config: derive(() => registry.getConfigTypeSchema(graph)),
  });
}

function fromPlainZod(builder: BuilderDefinitions): SchemaSet | undefined {
  const state = zodToJsonSchema(builder._schemaRuntimeDefinition);
  return compactSchemaSet({
    state,
    // No input schema: the state's, with every field optional.
    input: zodToJsonSchema(builder._inputRuntimeDefinition) ?? withoutRequired(state),
    output: zodToJsonSchema(builder._outputRuntimeDefinition),
    config: zodToJsonSchema(builder._configRuntimeSchema),
  });
}

function zodToJsonSchema(schema: unknown): SchemaSet["state"] {
  if (!isZodSchemaV3(schema) && !isZodSchemaV4(schema)) return undefined;
  return derive(() => toJsonSchema(schema)) as SchemaSet["state"];
}

function withoutRequired(schema: SchemaSet["state"]): SchemaSet["state"] {
  if (!schema) return undefined;
  const { required: _required, ...rest } = schema;
  return rest;
}

/** A schema deriver's result, or undefined when it throws (a type without a JSON form). */
function derive(deriver: () => unknown): SchemaSet["state"] {
  try {
    return deriver() as SchemaSet["state"];
  } catch {
    return undefined;
  }
}

function isStateSchemaLike(value: unknown): value is StateSchemaLike {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Partial<StateSchemaLike>).getJsonSchema === "function" &&
    typeof (value as Partial<StateSchemaLike>).getInputJsonSchema === "function"
  );
}
