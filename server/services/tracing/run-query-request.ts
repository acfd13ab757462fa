import type { MessageShape } from "@bufbuild/protobuf";
import { timestampDate, type Value } from "@bufbuild/protobuf/wkt";
import type { QueryRunsRequestSchema } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import { isUuid } from "../../ids.js";
import { RUN_JSON_COLUMNS, type RunQuery } from "../../store/tracing/run-query-store.js";
import {
  describeFilterError,
  FilterError,
  type RunCondition,
  SEARCH_FIELDS,
  validateFilter,
} from "../../tracing/filter/index.js";
import { invalid } from "../request-validation.js";
import { decodeRunCursor } from "./run-cursor.js";
import { type RunField, selectedRunFields } from "./run-fields.js";

/** Largest page: LangSmith's limit too; the SDK keeps paging with the cursor. */
const MAX_PAGE_SIZE = 100;
/** Longest filter accepted: far beyond any hand-written or UI-generated filter, cheap to parse. */
const MAX_FILTER_LENGTH = 20_000;

/** A validated QueryRuns request: the store query and the fields to return. */
export interface ParsedRunQuery {
  query: RunQuery;
  fields: ReadonlySet<RunField>;
}

/**
 * Validates a QueryRuns request of `workspaceId` and turns it into a store query. Every problem is
 * INVALID_ARGUMENT naming the parameter; filter errors carry the position and what was expected.
 */
export function parseRunQuery(
  request: MessageShape<typeof QueryRunsRequestSchema>,
  workspaceId: string,
): ParsedRunQuery {
  if (request.executionOrder !== undefined) {
    throw invalid("execution_order is deprecated and not supported: use is_root to select root runs");
  }
  const fields = selectedRunFields(request.select);
  const conditions: RunCondition[] = [];
  const filter = runFilterParameter("filter", request.filter);
  if (filter) conditions.push(filter);
  if (request.query !== undefined && request.query.trim() !== "") {
    conditions.push({ kind: "search", fields: SEARCH_FIELDS, text: request.query });
  }
  const order = request.order ?? "desc";
  if (order !== "asc" && order !== "desc") {
    throw invalid(`order must be "asc" or "desc", got ${JSON.stringify(order)}`);
  }
  const limit = request.limit ?? MAX_PAGE_SIZE;
  if (limit < 1) throw invalid(`limit must be at least 1, got ${limit}`);
  const query: RunQuery = {
    workspaceId,
    sessionIds: request.session.map((id, i) => uuidOf(`session[${i}]`, id)),
    ids: request.id.map((id, i) => uuidOf(`id[${i}]`, id)),
    referenceExampleIds: referenceExamples(request.referenceExample),
    runType: request.runType,
    isRoot: request.isRoot,
    error: request.error,
    traceId: request.trace === undefined ? undefined : uuidOf("trace", request.trace),
    parentRunId: request.parentRun === undefined ? undefined : uuidOf("parent_run", request.parentRun),
    startTime: request.startTime ? timestampDate(request.startTime) : undefined,
    endTime: request.endTime ? timestampDate(request.endTime) : undefined,
    conditions,
    traceCondition: runFilterParameter("trace_filter", request.traceFilter),
    treeCondition: runFilterParameter("tree_filter", request.treeFilter),
    order,
    limit: Math.min(limit, MAX_PAGE_SIZE),
    after: request.cursor ? decodeRunCursor(request.cursor) : undefined,
    json: new Set(RUN_JSON_COLUMNS.filter((c) => fields.has(c))),
  };
  return { query, fields };
}

/** The checked condition of a filter parameter; undefined when absent or blank. */
export function runFilterParameter(parameter: string, text: string | undefined): RunCondition | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  if (text.length > MAX_FILTER_LENGTH) {
    throw invalid(`${parameter} is longer than ${MAX_FILTER_LENGTH} characters`);
  }
  try {
    return validateFilter(text);
  } catch (error) {
    if (error instanceof FilterError) throw invalid(describeFilterError(error, parameter));
    throw error;
  }
}

/** A lowercased UUID, or INVALID_ARGUMENT naming the parameter. */
export function uuidOf(parameter: string, value: string): string {
  if (!isUuid(value)) throw invalid(`${parameter} must be a UUID, got ${JSON.stringify(value)}`);
  return value.toLowerCase();
}

/** `reference_example`: a UUID or a list of UUIDs (the SDK sends a single id as a string). */
function referenceExamples(value: Value | undefined): string[] {
  const kind = value?.kind;
  if (kind === undefined || kind.case === undefined || kind.case === "nullValue") return [];
  if (kind.case === "stringValue") return [uuidOf("reference_example", kind.value)];
  if (kind.case !== "listValue") throw invalid("reference_example must be a UUID or a list of UUIDs");
  return kind.value.values.map((v, i) => {
    if (v.kind.case !== "stringValue") throw invalid(`reference_example[${i}] must be a UUID string`);
    return uuidOf(`reference_example[${i}]`, v.kind.value);
  });
}
