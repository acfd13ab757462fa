import type { JsonObject } from "@bufbuild/protobuf";

/**
 * The JSON Schemas of one graph (or subgraph), as the LangGraph JS server names them internally: a
 * key is absent when that schema cannot be derived. The API answers them as `state_schema`,
 * `input_schema`, `output_schema`, `config_schema` and `context_schema` (the config schema again).
 */
export interface SchemaSet {
  state?: JsonObject;
  input?: JsonObject;
  output?: JsonObject;
  config?: JsonObject;
}

/**
 * `value` as plain JSON (functions and undefined dropped, class instances as plain objects), or
 * undefined when it is not an object: what a schema deriver returned, made safe to answer.
 */
export function plainSchema(value: unknown): JsonObject | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  return JSON.parse(JSON.stringify(value)) as JsonObject;
}

/** Drops the keys whose schema is missing; undefined when none is left. */
export function compactSchemaSet(set: SchemaSet): SchemaSet | undefined {
  const compact: SchemaSet = {};
  for (const key of ["state", "input", "output", "config"] as const) {
    const schema = plainSchema(set[key]);
    if (schema) compact[key] = schema;
  }
  return Object.keys(compact).length > 0 ? compact : undefined;
}
