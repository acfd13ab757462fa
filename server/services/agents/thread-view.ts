import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Thread, ThreadSchema } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import type { ThreadRecord } from "../../store/agents/thread-store.js";
import { invalid } from "../request-validation.js";
import { toValue } from "./json-value.js";

/** Fields a search may `select`. `context` is accepted for SDK compatibility; threads have none. */
export const THREAD_SELECT_FIELDS = [
  "thread_id",
  "created_at",
  "updated_at",
  "state_updated_at",
  "metadata",
  "config",
  "context",
  "status",
  "values",
  "interrupts",
  "error",
] as const;

/** A field of {@link THREAD_SELECT_FIELDS}. */
export type ThreadSelectField = (typeof THREAD_SELECT_FIELDS)[number];

/** Most `extract` entries one search takes: each is evaluated on every thread of the page. */
export const MAX_EXTRACT = 10;
/** Longest `extract` path: far above any real path, small enough to keep parsing trivial. */
const MAX_EXTRACT_PATH = 500;
/** Roots an `extract` path may start from. */
const EXTRACT_ROOTS = ["values", "metadata", "config", "interrupts"] as const;
/** One path step after the root: `.key` or `[index]` (negative counts from the end). */
const STEP = /\.([^.[\]]+)|\[(-?\d+)\]/y;

/** A parsed `extract` path: its root and its steps (strings are keys, numbers array indexes). */
export interface ExtractPath {
  root: (typeof EXTRACT_ROOTS)[number];
  steps: (string | number)[];
}

/** The validated `select` list; undefined means every field. */
export function parseSelect(select: readonly string[]): Set<ThreadSelectField> | undefined {
  if (select.length === 0) return undefined;
  for (const field of select) {
    if (!(THREAD_SELECT_FIELDS as readonly string[]).includes(field))
      throw invalid(
        `select: unknown field ${JSON.stringify(field)}; allowed: ${THREAD_SELECT_FIELDS.join(", ")}`,
      );
  }
  return new Set(select as ThreadSelectField[]);
}

/** Parses `values.messages[-1].content`-style paths. */
export function parseExtract(extract: JsonObject | undefined): Map<string, ExtractPath> | undefined {
  if (extract === undefined) return undefined;
  const entries = Object.entries(extract);
  if (entries.length > MAX_EXTRACT)
    throw invalid(`extract takes at most ${MAX_EXTRACT} paths, got ${entries.length}`);
  const out = new Map<string, ExtractPath>();
  for (const [alias, path] of entries) {
    if (typeof path !== "string" || path.length === 0 || path.length > MAX_EXTRACT_PATH)
      throw invalid(`extract.${alias} must be a path string of 1 to ${MAX_EXTRACT_PATH} characters`);
    out.set(alias, parsePath(alias, path));
  }
  return out;
}

function parsePath(alias: string, path: string): ExtractPath {
  const root = EXTRACT_ROOTS.find((r) => path === r || path.startsWith(`${r}.`) || path.startsWith(`${r}[`));
  if (!root)
    throw invalid(
      `extract.${alias}: path ${JSON.stringify(path)} must start with one of ${EXTRACT_ROOTS.join(", ")}`,
    );
  const steps: (string | number)[] = [];
  let at = root.length;
  while (at < path.length) {
    STEP.lastIndex = at;
    const match = STEP.exec(path);
    if (!match)
      throw invalid(
        `extract.${alias}: path ${JSON.stringify(path)} is malformed at character ${at + 1}; use .key and [index] steps`,
      );
    steps.push(match[1] !== undefined ? match[1] : Number(match[2]));
    at = STEP.lastIndex;
  }
  return { root, steps };
}

function follow(value: JsonValue | undefined, steps: readonly (string | number)[]): JsonValue {
  let current: JsonValue | undefined = value;
  for (const step of steps) {
    if (typeof step === "number") {
      if (!Array.isArray(current)) return null;
      current = current[step < 0 ? current.length + step : step];
    } else {
      if (typeof current !== "object" || current === null || Array.isArray(current)) return null;
      current = current[step];
    }
    if (current === undefined) return null;
  }
  return current ?? null;
}

/** Options of {@link threadView}. */
export interface ThreadViewOptions {
  /** Only these fields (search `select`). */
  select?: Set<ThreadSelectField>;
  /** Add `ttl` (`include=ttl`). */
  includeTtl?: boolean;
  /** Add `extracted`. */
  extract?: Map<string, ExtractPath>;
}

/** A thread row as the API shows it. */
export function threadView(record: ThreadRecord, options: ThreadViewOptions = {}): Thread {
  const want = (field: ThreadSelectField) => !options.select || options.select.has(field);
  const values: JsonValue = record.values ?? {};
  const thread = create(ThreadSchema, {});
  if (want("thread_id")) thread.threadId = record.threadId;
  if (want("created_at")) thread.createdAt = timestampFromDate(record.createdAt);
  if (want("updated_at")) thread.updatedAt = timestampFromDate(record.updatedAt);
  if (want("state_updated_at")) thread.stateUpdatedAt = timestampFromDate(record.stateUpdatedAt);
  if (want("metadata")) thread.metadata = record.metadata;
  if (want("config")) thread.config = record.config;
  if (want("status")) thread.status = record.status;
  if (want("values")) thread.values = toValue(values);
  if (want("interrupts")) thread.interrupts = record.interrupts;
  if (want("error")) thread.error = toValue(record.error);
  if (options.includeTtl) {
    thread.ttl = toValue(
      record.ttl && {
        strategy: record.ttl.strategy,
        ttl_minutes: record.ttl.minutes,
        expires_at: record.ttl.expiresAt.toISOString(),
      },
    );
  }
  if (options.extract) {
    const roots: Record<ExtractPath["root"], JsonValue> = {
      values,
      metadata: record.metadata,
      config: record.config,
      interrupts: record.interrupts,
    };
    const extracted: JsonObject = {};
    for (const [alias, path] of options.extract) extracted[alias] = follow(roots[path.root], path.steps);
    thread.extracted = extracted;
  }
  return thread;
}
