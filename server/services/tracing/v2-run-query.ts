import type { MessageShape } from "@bufbuild/protobuf";
import type { QueryRunsRequestSchema } from "../../../gen/agentplane/tracing/v2/run_service_pb.js";
import type { RunQuery } from "../../store/tracing/run-query-store.js";
import type { RunCondition } from "../../tracing/filter/index.js";
import { invalid } from "../request-validation.js";
import { decodeRunCursor } from "./run-cursor.js";
import { runFilterParameter, uuidOf } from "./run-query-request.js";
import { pageSize, timeWindow } from "./v2-request.js";
import { jsonColumnsOf, selectedV2Fields, type V2RunField } from "./v2-run-fields.js";
import { v2RowColumns } from "./v2-run-message.js";

/** The v2 run types (uppercase) and the stored ones they name. */
const RUN_TYPES = ["TOOL", "CHAIN", "LLM", "RETRIEVER", "EMBEDDING", "PROMPT", "PARSER"] as const;

/** A validated v2 QueryRuns request: the store query and the fields to return. */
export interface ParsedV2RunQuery {
  query: RunQuery;
  fields: ReadonlySet<V2RunField>;
}

/**
 * Validates a v2 QueryRuns request of `workspaceId` and turns it into the store query the v1 route
 * also runs: newest first, keyset cursor, the same filter language. Every problem is
 * INVALID_ARGUMENT naming the parameter.
 */
export function parseV2RunQuery(
  request: MessageShape<typeof QueryRunsRequestSchema>,
  workspaceId: string,
  now: Date,
): ParsedV2RunQuery {
  if (request.referenceDatasetId !== undefined) {
    throw invalid(
      "reference_dataset_id is not supported by agentplane (it stores no datasets): send project_ids",
    );
  }
  if (request.projectIds.length === 0) {
    throw invalid("project_ids is required: the UUIDs of the tracing projects to search");
  }
  const fields = selectedV2Fields(request.selects);
  const window = timeWindow(request.minStartTime, request.maxStartTime, now);
  const conditions: RunCondition[] = [];
  const filter = runFilterParameter("filter", request.filter);
  if (filter) conditions.push(filter);
  const query: RunQuery = {
    workspaceId,
    sessionIds: request.projectIds.map((id, i) => uuidOf(`project_ids[${i}]`, id)),
    ids: request.ids.map((id, i) => uuidOf(`ids[${i}]`, id)),
    referenceExampleIds: request.referenceExamples.map((id, i) => uuidOf(`reference_examples[${i}]`, id)),
    runType: request.runType === undefined ? undefined : runTypeOf(request.runType),
    isRoot: request.isRoot,
    error: request.hasError,
    traceId: request.traceId === undefined ? undefined : uuidOf("trace_id", request.traceId),
    startTime: window.min,
    endTime: window.max,
    conditions,
    traceCondition: runFilterParameter("trace_filter", request.traceFilter),
    treeCondition: runFilterParameter("tree_filter", request.treeFilter),
    order: "desc",
    limit: pageSize(request.pageSize),
    after: request.cursor ? decodeRunCursor(request.cursor) : undefined,
    json: jsonColumnsOf(fields),
    columns: v2RowColumns(fields),
  };
  return { query, fields };
}

/** The stored (lowercase) run type of a v2 `run_type`; INVALID_ARGUMENT listing the valid ones. */
function runTypeOf(value: string): string {
  const upper = value.toUpperCase();
  if (!(RUN_TYPES as readonly string[]).includes(upper)) {
    throw invalid(`run_type must be one of ${RUN_TYPES.join(", ")}; got ${JSON.stringify(value)}`);
  }
  return upper.toLowerCase();
}
