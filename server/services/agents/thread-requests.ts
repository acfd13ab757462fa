import type { JsonObject } from "@bufbuild/protobuf";
import type { ThreadTtlInput } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import {
  THREAD_SORT_COLUMNS,
  type ThreadSortColumn,
  type ThreadStatus,
  type ThreadTtl,
  type ThreadTtlStrategy,
} from "../../store/agents/thread-store.js";
import { queryList } from "../query-lists.js";
import { invalid, oneOf } from "../request-validation.js";

/** Largest page of search and history: bounds the work and the response size of one request. */
export const MAX_PAGE = 1000;
/** Default page of search, as the SDKs send it. */
export const DEFAULT_SEARCH_LIMIT = 10;
/** Default number of history states: the seed fixes it at 1. */
export const DEFAULT_HISTORY_LIMIT = 1;
/** Most thread ids one prune call takes: bounds one request's deletes. */
export const MAX_PRUNE_IDS = 1000;

const STATUSES: readonly ThreadStatus[] = ["idle", "busy", "interrupted", "error"];
const TTL_STRATEGIES: readonly ThreadTtlStrategy[] = ["delete", "keep_latest"];

/** A validated thread status filter. */
export function parseStatus(value: string | undefined): ThreadStatus | undefined {
  return value === undefined ? undefined : oneOf(value, STATUSES, "status", "idle");
}

/** A validated sort column (default created_at) and direction (default desc). */
export function parseSort(
  sortBy: string | undefined,
  sortOrder: string | undefined,
): { sortBy: ThreadSortColumn; descending: boolean } {
  return {
    sortBy: oneOf(sortBy, THREAD_SORT_COLUMNS, "sort_by", "created_at"),
    descending: oneOf(sortOrder, ["asc", "desc"] as const, "sort_order", "desc") === "desc",
  };
}

/** A validated page size. */
export function parseLimit(value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (value < 1 || value > MAX_PAGE) throw invalid(`limit must be from 1 to ${MAX_PAGE}, got ${value}`);
  return value;
}

/** A validated offset. */
export function parseOffset(value: number | undefined): number {
  if (value === undefined) return 0;
  if (value < 0) throw invalid(`offset must be 0 or more, got ${value}`);
  return value;
}

/** A validated TTL; undefined when the request has none. */
export function parseTtl(input: ThreadTtlInput | undefined): ThreadTtl | undefined {
  if (!input) return undefined;
  const strategy = oneOf(input.strategy, TTL_STRATEGIES, "ttl.strategy", "delete");
  const minutes = input.ttl;
  if (minutes === undefined || !Number.isFinite(minutes) || minutes <= 0)
    throw invalid("ttl.ttl must be a number of minutes above 0");
  return { strategy, minutes };
}

/** The `include` values of GetThread; the SDK may send them as one JSON array string. */
export function parseInclude(values: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const name of queryList(values, "include", { commas: true })) {
    if (name !== "ttl") throw invalid(`include accepts only "ttl", got ${JSON.stringify(name)}`);
    out.add(name);
  }
  return out;
}

/** A JSON object field that must be present. */
export function requireObject(value: JsonObject | undefined, field: string): JsonObject {
  if (value === undefined) throw invalid(`${field} is required and must be a JSON object`);
  return value;
}
