import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { findProjectIds } from "../../store/tracing/run-query-store.js";
import type { WorkspaceBound } from "../../store/tracing/workspace-scope.js";
import { invalid } from "../request-validation.js";
import { uuidOf } from "./run-query-request.js";

/** Largest page, as in LangSmith; the SDK keeps paging with the cursor. */
export const MAX_PAGE_SIZE = 100;
/** The window a v2 query scans when it names no start: the last day, LangSmith's default. */
const DEFAULT_WINDOW_MS = 24 * 60 * 60 * 1000;

/** A start-time window: from `min` to `max`. */
export interface TimeWindow {
  min: Date;
  max: Date;
}

/**
 * The window of `min_start_time` and `max_start_time`: a day before the request and the request
 * time when absent, as LangSmith. INVALID_ARGUMENT when the minimum is after the maximum.
 */
export function timeWindow(min: Timestamp | undefined, max: Timestamp | undefined, now: Date): TimeWindow {
  const maxDate = max ? timestampDate(max) : now;
  const minDate = min ? timestampDate(min) : new Date(maxDate.getTime() - DEFAULT_WINDOW_MS);
  if (minDate > maxDate) {
    throw invalid(
      `min_start_time (${minDate.toISOString()}) must not be after max_start_time (${maxDate.toISOString()})`,
    );
  }
  return { min: minDate, max: maxDate };
}

/** `page_size`: 1 to 100, default and cap 100. */
export function pageSize(value: number | undefined): number {
  if (value === undefined) return MAX_PAGE_SIZE;
  if (value < 1) throw invalid(`page_size must be at least 1, got ${value}`);
  return Math.min(value, MAX_PAGE_SIZE);
}

/** A required UUID parameter, lowercased; INVALID_ARGUMENT naming it when absent or not a UUID. */
export function requiredUuid(parameter: string, value: string | undefined): string {
  if (value === undefined || value === "") throw invalid(`${parameter} is required: the UUID of the project`);
  return uuidOf(parameter, value);
}

/** NOT_FOUND unless the workspace has the project. */
export async function requireProject(
  q: WorkspaceBound,
  workspaceId: string,
  projectId: string,
): Promise<void> {
  const [found] = await findProjectIds(q, workspaceId, [projectId]);
  if (!found) throw new ConnectError(`project ${projectId} not found`, Code.NotFound);
}
