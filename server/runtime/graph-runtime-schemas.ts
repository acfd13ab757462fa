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
  /** Channel name → channel, of the state, the input and the output (an `Annotation`'s spec). */
  _schemaDefinition?: unknown;
  _inputDefinition?: unknown;
  _outputDefinition?: unknown;
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

/** The JSON Schema dialect the LangGraph JS server's schemas from types declare. */
const DRAFT_07 = "http://json-schema.org/draft-07/schema#";

/**
 * Schemas from the channels a graph's state is made of, for a graph that has neither runtime
 * schemas nor TypeScript types to read (an `Annotation` state in a plain JavaScript module): each
 * channel is a property; a channel whose reducer starts from a default (`Annotation({reducer,
 * default})`) gets that value's JSON type and the default. Undefined when the graph has no
 * channel definitions (the functional API).
 */
export function channelGraphSchemas(graph: CompiledGraph): SchemaSet | undefined {
  const builder = (graph as { builder?: BuilderDefinitions }).builder;
  if (typeof builder !== "object" || builder === null) return undefined;
  const state = channelsSchema(builder._schemaDefinition);
  if (!state) return undefined;
  return compactSchemaSet({
    state,
    input: channelsSchema(builder._inputDefinition) ?? state,
    output: channelsSchema(builder._outputDefinition) ?? state,
  });
}

function channelsSchema(definition: unknown): SchemaSet["state"] {
  if (typeof definition !== "object" || definition === null) return undefined;
  const properties: Record<string, Record<string, unknown>> = {};
  for (const [name, channel] of Object.entries(definition)) properties[name] = channelSchema(channel);
  if (Object.keys(properties).length === 0) return undefined;
  return { type: "object", properties, $schema: DRAFT_07 } as SchemaSet["state"];
}

function channelSchema(channel: unknown): Record<string, unknown> {
  const factory = (channel as { initialValueFactory?: unknown } | null)?.initialValueFactory;
  if (typeof factory !== "function") return {};
  let value: unknown;
  try {
    value = (factory as () => unknown)();
  } catch {
    return {};
  }
  const type = jsonType(value);
  return type ? { type, default: value } : {};
}

function jsonType(value: unknown): string | undefined {
  if (Array.isArray(value)) return "array";
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
    case "boolean":
      return typeof value;
    case "number":
      return Number.isFinite(value) ? "number" : undefined;
    case "object":
      return Object.getPrototypeOf(value) === Object.prototype ? "object" : undefined;
    default:
      return undefined;
  }
}
