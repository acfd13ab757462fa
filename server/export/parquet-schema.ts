import type { SchemaElement } from "hyparquet-writer";
import type { ExportableRunField } from "../store/export/run-export-store.js";

/** How a field is typed in `v2_beta` Parquet. */
export type ColumnKind = "string" | "string-list" | "timestamp" | "boolean" | "json" | "int64" | "double";

/** The kind of every exportable field (the seed's exportable fields, typed as v2_beta asks). */
export const FIELD_KINDS: Readonly<Record<ExportableRunField, ColumnKind>> = {
  id: "string",
  tenant_id: "string",
  session_id: "string",
  trace_id: "string",
  parent_run_id: "string",
  parent_run_ids: "string-list",
  reference_example_id: "string",
  name: "string",
  run_type: "string",
  start_time: "timestamp",
  end_time: "timestamp",
  status: "string",
  is_root: "boolean",
  dotted_order: "string",
  trace_tier: "string",
  inputs: "json",
  outputs: "json",
  error: "string",
  extra: "json",
  events: "json",
  tags: "string-list",
  feedback_stats: "json",
  total_tokens: "int64",
  prompt_tokens: "int64",
  completion_tokens: "int64",
  total_cost: "double",
  prompt_cost: "double",
  completion_cost: "double",
  first_token_time: "timestamp",
};

/** A column as the manifest describes it: name, Parquet physical type and logical type. */
export interface ColumnDescription {
  name: string;
  physical_type: string;
  logical_type: string;
}

/** The manifest's description of each kind. */
const DESCRIPTIONS: Readonly<Record<ColumnKind, Omit<ColumnDescription, "name">>> = {
  string: { physical_type: "BYTE_ARRAY", logical_type: "STRING" },
  "string-list": { physical_type: "BYTE_ARRAY", logical_type: "LIST<STRING>" },
  timestamp: { physical_type: "INT64", logical_type: "TIMESTAMP(MICROS, UTC)" },
  boolean: { physical_type: "BOOLEAN", logical_type: "NONE" },
  json: { physical_type: "BYTE_ARRAY", logical_type: "STRING (JSON text)" },
  int64: { physical_type: "INT64", logical_type: "NONE" },
  double: { physical_type: "DOUBLE", logical_type: "NONE" },
};

/** The schema elements of one field (a LIST is three: the field, its repeated group, the element). */
function elementsOf(name: string, kind: ColumnKind): SchemaElement[] {
  switch (kind) {
    case "string":
    case "json":
      return [{ name, type: "BYTE_ARRAY", repetition_type: "OPTIONAL", converted_type: "UTF8" }];
    case "string-list":
      return [
        { name, repetition_type: "OPTIONAL", converted_type: "LIST", num_children: 1 },
        { name: "list", repetition_type: "REPEATED", num_children: 1 },
        { name: "element", type: "BYTE_ARRAY", repetition_type: "OPTIONAL", converted_type: "UTF8" },
      ];
    case "timestamp":
      return [
        {
          name,
          type: "INT64",
          repetition_type: "OPTIONAL",
          logical_type: { type: "TIMESTAMP", isAdjustedToUTC: true, unit: "MICROS" },
        },
      ];
    case "boolean":
      return [{ name, type: "BOOLEAN", repetition_type: "OPTIONAL" }];
    case "int64":
      return [{ name, type: "INT64", repetition_type: "OPTIONAL" }];
    case "double":
      return [{ name, type: "DOUBLE", repetition_type: "OPTIONAL" }];
  }
}

/** The Parquet schema of a file with `fields` as its columns, in that order. */
export function parquetSchema(fields: readonly ExportableRunField[]): SchemaElement[] {
  return [
    { name: "root", num_children: fields.length },
    ...fields.flatMap((field) => elementsOf(field, FIELD_KINDS[field])),
  ];
}

/** What a manifest says of the columns of `fields`. */
export function describeColumns(fields: readonly ExportableRunField[]): ColumnDescription[] {
  return fields.map((name) => ({ name, ...DESCRIPTIONS[FIELD_KINDS[name]] }));
}
