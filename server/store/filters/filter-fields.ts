/**
 * The fields a run filter may name, and what each accepts. The SQL of every field is fixed in
 * run-filter-sql.ts; nothing a client sends becomes an identifier.
 */

/** The value type of a column field. */
export type ColumnType = "uuid" | "text" | "timestamp" | "number" | "latency" | "boolean";

/** A field compared directly (one value per run). */
export interface ColumnField {
  readonly kind: "column";
  readonly name: ColumnFieldName;
  readonly type: ColumnType;
  /** Whether the run may have no value, so `eq(field, null)` / `neq(field, null)` make sense. */
  readonly nullable: boolean;
  /** The only values the field takes, when it is an enumeration (checked, to catch typos). */
  readonly values?: readonly string[];
}

/** The column fields. */
export type ColumnFieldName =
  | "id"
  | "trace_id"
  | "session_id"
  | "parent_run_id"
  | "reference_example_id"
  | "name"
  | "run_type"
  | "status"
  | "error"
  | "thread_id"
  | "dotted_order"
  | "start_time"
  | "end_time"
  | "first_token_time"
  | "latency"
  | "total_tokens"
  | "prompt_tokens"
  | "completion_tokens"
  | "total_cost"
  | "prompt_cost"
  | "completion_cost"
  | "is_root";

/**
 * Key/value families: `<family>_key` and `<family>_value` (`feedback_score` for feedback) name the
 * key and the value of one entry: of the run's metadata, of its top-level inputs or outputs, or one
 * of its feedback items.
 */
export type EntryFamily = "metadata" | "input" | "output" | "feedback";

/** Which part of an entry a key/value field names. */
export type EntryPart = "key" | "value";

/** A field naming the key or the value of an entry of a {@link EntryFamily}. */
export interface EntryField {
  readonly kind: "entry";
  readonly name: string;
  readonly family: EntryFamily;
  readonly part: EntryPart;
}

/** Fields usable only with `has`. */
export interface HasField {
  readonly kind: "has";
  readonly name: "tags" | "metadata";
}

/** Any field of the language. */
export type FilterField = ColumnField | EntryField | HasField;

const column = (
  name: ColumnFieldName,
  type: ColumnType,
  nullable: boolean,
  values?: readonly string[],
): ColumnField => ({ kind: "column", name, type, nullable, ...(values ? { values } : {}) });

const entry = (name: string, family: EntryFamily, part: EntryPart): EntryField => ({
  kind: "entry",
  name,
  family,
  part,
});

/** Every field, by name. */
export const FILTER_FIELDS: ReadonlyMap<string, FilterField> = new Map<string, FilterField>(
  [
    column("id", "uuid", false),
    column("trace_id", "uuid", false),
    column("session_id", "uuid", false),
    column("parent_run_id", "uuid", true),
    column("reference_example_id", "uuid", true),
    column("name", "text", false),
    column("run_type", "text", false),
    column("status", "text", false, ["success", "error", "pending"]),
    column("error", "text", true),
    column("thread_id", "text", true),
    column("dotted_order", "text", false),
    column("start_time", "timestamp", false),
    column("end_time", "timestamp", true),
    column("first_token_time", "timestamp", true),
    column("latency", "latency", true),
    column("total_tokens", "number", true),
    column("prompt_tokens", "number", true),
    column("completion_tokens", "number", true),
    column("total_cost", "number", true),
    column("prompt_cost", "number", true),
    column("completion_cost", "number", true),
    column("is_root", "boolean", false),
    entry("metadata_key", "metadata", "key"),
    entry("metadata_value", "metadata", "value"),
    entry("input_key", "input", "key"),
    entry("input_value", "input", "value"),
    entry("output_key", "output", "key"),
    entry("output_value", "output", "value"),
    entry("feedback_key", "feedback", "key"),
    entry("feedback_score", "feedback", "value"),
    { kind: "has", name: "tags" } satisfies HasField,
    { kind: "has", name: "metadata" } satisfies HasField,
  ].map((field) => [field.name, field] as const),
);

/** Fields `search(field, "text")` accepts; `search("text")` searches all of them. */
export const SEARCH_FIELDS = ["name", "error", "inputs", "outputs"] as const;

/** A field `search` looks in. */
export type SearchField = (typeof SEARCH_FIELDS)[number];
