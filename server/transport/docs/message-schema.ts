import { type DescEnum, type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import type { ProtoComments } from "./proto-comments.js";

/**
 * JSON Schemas (the 2020-12 dialect OpenAPI 3.1 uses) of proto messages as the REST routes read and
 * write them: proto field names, enums by name, 64-bit integers as decimal strings (numbers are
 * accepted too), bytes as base64, and the well-known types in their proto3 JSON forms. Messages and
 * enums become named components referenced with `$ref`, so recursive types (Struct, Value) are fine.
 * The .proto comments describe messages, fields and enum values.
 */

/** A JSON Schema object. */
export type JsonSchema = { [key: string]: unknown };

/** Collects the component schemas that the schemas it hands out refer to. */
export interface SchemaCollector {
  /** The schema of one message, as a `$ref` to its component (or inline for well-known types). */
  message(message: DescMessage): JsonSchema;
  /**
   * The schema of a field's whole value (an array for a repeated field, an object for a map), with
   * the field's comment as its description.
   */
  field(field: DescField): JsonSchema;
  /** The comment of a field, if it has one. */
  describe(field: DescField): string | undefined;
  /** The schema of one element of a field (for a repeated field, one item). */
  element(field: DescField): JsonSchema;
  /** Every component collected so far, by name. */
  components(): Record<string, JsonSchema>;
}

/** Where component schemas live in an OpenAPI document. */
const COMPONENTS_PREFIX = "#/components/schemas/";

/** The proto3 JSON forms of the well-known types that are not plain objects. */
const WELL_KNOWN: ReadonlyMap<string, JsonSchema> = new Map<string, JsonSchema>([
  ["google.protobuf.Timestamp", { type: "string", format: "date-time" }],
  [
    "google.protobuf.Duration",
    { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$", description: "Seconds, e.g. `1.5s`." },
  ],
  ["google.protobuf.FieldMask", { type: "string", description: "Comma-separated field paths." }],
  ["google.protobuf.Struct", { type: "object", additionalProperties: true }],
  ["google.protobuf.Value", { description: "Any JSON value." }],
  ["google.protobuf.ListValue", { type: "array", items: {} }],
  ["google.protobuf.Empty", { type: "object" }],
  [
    "google.protobuf.Any",
    {
      type: "object",
      properties: { "@type": { type: "string" } },
      required: ["@type"],
      additionalProperties: true,
    },
  ],
  ["google.protobuf.DoubleValue", { type: ["number", "null"] }],
  ["google.protobuf.FloatValue", { type: ["number", "null"] }],
  ["google.protobuf.Int64Value", { type: ["string", "integer", "null"], format: "int64" }],
  ["google.protobuf.UInt64Value", { type: ["string", "integer", "null"], format: "uint64" }],
  ["google.protobuf.Int32Value", { type: ["integer", "null"], format: "int32" }],
  ["google.protobuf.UInt32Value", { type: ["integer", "null"], format: "uint32" }],
  ["google.protobuf.BoolValue", { type: ["boolean", "null"] }],
  ["google.protobuf.StringValue", { type: ["string", "null"] }],
  ["google.protobuf.BytesValue", { type: ["string", "null"], contentEncoding: "base64" }],
]);

/** Creates a collector; one per document, so each component is described once. */
export function createSchemaCollector(comments: ProtoComments = new Map()): SchemaCollector {
  const components = new Map<string, JsonSchema>();
  const describe = (f: DescField) => comments.get(`${f.parent.typeName}.${f.name}`);

  const ref = (name: string): JsonSchema => ({ $ref: `${COMPONENTS_PREFIX}${name}` });

  const enumSchema = (desc: DescEnum): JsonSchema => {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    if (!components.has(desc.typeName)) {
      const values = desc.values.map((v) => {
        const text = comments.get(`${desc.typeName}.${v.name}`);
        return `- \`${v.name}\`${text ? `: ${text.replaceAll("\n", " ")}` : ""}`;
      });
      const intro = comments.get(desc.typeName);
      components.set(desc.typeName, {
        type: "string",
        enum: desc.values.map((v) => v.name),
        description: [...(intro ? [intro, ""] : []), ...values].join("\n"),
      });
    }
    return ref(desc.typeName);
  };

  const message = (desc: DescMessage): JsonSchema => {
    const known = WELL_KNOWN.get(desc.typeName);
    if (known) return known;
    if (!components.has(desc.typeName)) {
      // Reserved before the fields are described, so a message that contains itself refers back.
      const schema: JsonSchema = { type: "object" };
      components.set(desc.typeName, schema);
      const properties: Record<string, JsonSchema> = {};
      for (const f of desc.fields) properties[f.name] = field(f);
      if (desc.fields.length > 0) schema.properties = properties;
      const oneofs = desc.oneofs
        .filter((o) => o.fields.length > 1)
        .map((o) => `At most one of ${o.fields.map((f) => `\`${f.name}\``).join(", ")}.`);
      const text = [comments.get(desc.typeName), ...oneofs].filter((t) => t !== undefined).join("\n\n");
      if (text !== "") schema.description = text;
    }
    return ref(desc.typeName);
  };

  const element = (f: DescField): JsonSchema => {
    switch (f.fieldKind) {
      case "scalar":
        return scalarSchema(f.scalar);
      case "enum":
        return enumSchema(f.enum);
      case "message":
        return message(f.message);
      case "list":
        if (f.listKind === "scalar") return scalarSchema(f.scalar);
        if (f.listKind === "enum") return enumSchema(f.enum);
        return message(f.message);
      case "map":
        if (f.mapKind === "scalar") return scalarSchema(f.scalar);
        if (f.mapKind === "enum") return enumSchema(f.enum);
        return message(f.message);
    }
  };

  const field = (f: DescField): JsonSchema => {
    const text = describe(f);
    const described = text === undefined ? {} : { description: text };
    if (f.fieldKind === "list") return { type: "array", items: element(f), ...described };
    if (f.fieldKind === "map") return { type: "object", additionalProperties: element(f), ...described };
    return { ...element(f), ...described };
  };

  return {
    message,
    field,
    describe,
    element,
    components: () => Object.fromEntries([...components].sort(([a], [b]) => a.localeCompare(b))),
  };
}

function scalarSchema(scalar: ScalarType): JsonSchema {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "uint32" };
    // Written as decimal strings (JSON numbers lose precision past 2^53); read from either form.
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: ["string", "integer"], format: "int64" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: ["string", "integer"], format: "uint64" };
  }
}
