import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type Assistant,
  AssistantSchema,
  type GraphSchema,
  GraphSchemaSchema,
} from "../../../gen/agentplane/agents/v1/assistant_service_pb.js";
import type { GraphSchemas } from "../../runtime/graph-introspection.js";
import type { AssistantRecord } from "../../store/agents/assistant-store.js";

/** Assistant fields a search may `select`, by their wire (proto) names. */
export const ASSISTANT_FIELDS = [
  "assistant_id",
  "graph_id",
  "config",
  "context",
  "created_at",
  "updated_at",
  "metadata",
  "version",
  "name",
  "description",
] as const;

/** One of {@link ASSISTANT_FIELDS}. */
export type AssistantField = (typeof ASSISTANT_FIELDS)[number];

/** Checks a `select` list; empty means every field. */
export function parseSelect(select: readonly string[]): ReadonlySet<AssistantField> | undefined {
  if (select.length === 0) return undefined;
  const unknown = select.filter((f) => !(ASSISTANT_FIELDS as readonly string[]).includes(f));
  if (unknown.length > 0) {
    throw new ConnectError(
      `select: unknown field${unknown.length > 1 ? "s" : ""} ${unknown.map((f) => `"${f}"`).join(", ")}; choose from ${ASSISTANT_FIELDS.join(", ")}`,
      Code.InvalidArgument,
    );
  }
  return new Set(select as AssistantField[]);
}

/**
 * The wire form of an assistant (or of a version: no `updated_at`), optionally only the `select`ed
 * fields; unselected fields stay unset, so REST leaves them out.
 */
export function assistantMessage(a: AssistantRecord, select?: ReadonlySet<AssistantField>): Assistant {
  const all: Record<AssistantField, unknown> = {
    assistant_id: a.assistantId,
    graph_id: a.graphId,
    config: a.config as JsonObject,
    context: a.context as JsonObject,
    created_at: timestampFromDate(a.createdAt),
    updated_at: a.updatedAt && timestampFromDate(a.updatedAt),
    metadata: a.metadata as JsonObject,
    version: a.version,
    name: a.name,
    description: a.description ?? undefined,
  };
  // Only defined values go into the init object: protobuf-es treats a present `undefined` as set.
  const init: Record<string, unknown> = {};
  for (const field of ASSISTANT_FIELDS) {
    const value = all[field];
    if (value !== undefined && (!select || select.has(field))) init[CAMEL[field]] = value;
  }
  return create(AssistantSchema, init as MessageInitShape<typeof AssistantSchema>);
}

/** Proto field name → protobuf-es property name. */
const CAMEL: Record<AssistantField, string> = {
  assistant_id: "assistantId",
  graph_id: "graphId",
  config: "config",
  context: "context",
  created_at: "createdAt",
  updated_at: "updatedAt",
  metadata: "metadata",
  version: "version",
  name: "name",
  description: "description",
};

/** The wire form of a graph's schemas; `graphId` is left out for subgraphs. */
export function graphSchemaMessage(schemas: GraphSchemas, graphId?: string): GraphSchema {
  return create(GraphSchemaSchema, {
    ...(graphId === undefined ? {} : { graphId }),
    ...(schemas.input_schema ? { inputSchema: schemas.input_schema as JsonObject } : {}),
    ...(schemas.output_schema ? { outputSchema: schemas.output_schema as JsonObject } : {}),
    ...(schemas.state_schema ? { stateSchema: schemas.state_schema as JsonObject } : {}),
    ...(schemas.config_schema ? { configSchema: schemas.config_schema as JsonObject } : {}),
    ...(schemas.context_schema ? { contextSchema: schemas.context_schema as JsonObject } : {}),
  });
}
