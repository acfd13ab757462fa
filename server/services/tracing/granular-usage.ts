import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../../ids.js";
import type { Sql } from "../../store/db.js";
import { listGrantedWorkspaces } from "../../store/iam/workspace-store.js";
import type { UsageUnit } from "../../store/tracing/usage-ranges.js";
import { queryUsage, type UsageDimension } from "../../store/tracing/usage-store.js";
import { inWorkspaceScope } from "../../store/tracing/workspace-scope.js";
import { NO_DIMENSION_ID } from "../../tracing/usage-recorder.js";
import {
  AGGREGATIONS,
  bucketEndOf,
  rollupCover,
  strideOf,
  type UsageStride,
  unitForRange,
} from "../../tracing/usage-window.js";
import { organizationPermissions } from "../iam/permissions.js";
import type { Principal } from "../iam/principal.js";

/** The parameters of a granular usage request, as received (JSON and CSV share them). */
export interface GranularUsageParams {
  startTime: Date | undefined;
  endTime: Date | undefined;
  workspaceIds: readonly string[];
  /** Empty means `workspace`. */
  groupBy: string;
  /** Empty means "derived from the range". */
  aggregation: string;
}

/**
 * Dimension keys of a record: those of the requested group_by, and only they, are set; null when
 * the traces have no such value (no user, no key, a deleted project's name).
 */
export interface GranularUsageDimensions {
  workspace_id?: string | null;
  workspace_name?: string | null;
  project_id?: string | null;
  project_name?: string | null;
  user_id?: string | null;
  user_email?: string | null;
  api_key_short_key?: string | null;
}

/** Traces of one dimension value in one bucket. */
export interface GranularUsageRecord {
  /** Start of the bucket. */
  timeBucket: Date;
  /** End (exclusive) of the bucket: the next aligned boundary. */
  timeBucketEnd: Date;
  dimensions: GranularUsageDimensions;
  traces: number;
}

/** The answer of {@link computeGranularUsage}. */
export interface GranularUsage {
  unit: UsageUnit;
  stride: UsageStride;
  /** Only buckets with traces, oldest first, then by dimension label. */
  usage: GranularUsageRecord[];
}

/** group_by values, in the order error messages list them. */
const GROUP_BY: readonly UsageDimension[] = ["workspace", "project", "user", "api_key"];
/** Traces are an int32 on the wire (so they stay JSON numbers). */
const MAX_TRACES = 0x7fff_ffff;

/**
 * Validates a granular usage request, authorizes it (`organization:read`; requested workspaces the
 * caller cannot read are left out, as the reference API does) and sums the rollups. The one
 * computation behind both the JSON API and the CSV export.
 */
export async function computeGranularUsage(
  sql: Sql,
  principal: Principal,
  params: GranularUsageParams,
): Promise<GranularUsage> {
  if (!organizationPermissions(principal.organizationRole).includes("organization:read")) {
    throw new ConnectError(
      "permission denied: this call needs the organization:read permission",
      Code.PermissionDenied,
    );
  }
  const { start, end, workspaceIds, dimension, unit } = validate(params);
  const granted = new Set((await listGrantedWorkspaces(sql, principal.grant)).map((w) => w.id));
  const readable = [...new Set(workspaceIds.map((id) => id.toLowerCase()))].filter((id) => granted.has(id));
  const rows =
    readable.length === 0
      ? []
      : await inWorkspaceScope(sql, readable, (q) =>
          queryUsage(q, {
            organizationId: principal.organization.id,
            workspaceIds: readable,
            dimension,
            unit,
            cover: rollupCover(start, end, unit),
          }),
        );
  return {
    unit,
    stride: strideOf(unit),
    usage: rows.map((row) => {
      if (row.traces > MAX_TRACES) {
        throw new ConnectError(
          "a bucket holds more traces than fit an int32; ask for a finer aggregation",
          Code.OutOfRange,
        );
      }
      return {
        timeBucket: row.bucket,
        timeBucketEnd: bucketEndOf(unit, row.bucket),
        dimensions: dimensionsOf(dimension, row.dimensionId, row.label),
        traces: row.traces,
      };
    }),
  };
}

function validate(params: GranularUsageParams) {
  const invalid = (message: string) => new ConnectError(message, Code.InvalidArgument);
  const example = "as RFC 3339, e.g. 2026-01-05T00:00:00Z";
  if (!params.startTime) throw invalid(`start_time is required ${example}`);
  if (!params.endTime) throw invalid(`end_time is required ${example}`);
  if (params.endTime.getTime() <= params.startTime.getTime()) {
    throw invalid("end_time must be after start_time");
  }
  if (params.workspaceIds.length === 0) {
    throw invalid(
      "workspace_ids is required: give at least one workspace UUID (repeat the parameter for more)",
    );
  }
  const notUuid = params.workspaceIds.find((id) => !isUuid(id));
  if (notUuid !== undefined) throw invalid(`workspace_ids: ${JSON.stringify(notUuid)} is not a UUID`);
  const groupBy = params.groupBy || "workspace";
  const dimension = GROUP_BY.find((d) => d === groupBy);
  if (!dimension)
    throw invalid(`group_by must be one of ${GROUP_BY.join(", ")}; got ${JSON.stringify(groupBy)}`);
  let unit = unitForRange(params.startTime, params.endTime);
  if (params.aggregation) {
    const chosen = Object.hasOwn(AGGREGATIONS, params.aggregation)
      ? AGGREGATIONS[params.aggregation]
      : undefined;
    if (!chosen) {
      throw invalid(
        `aggregation must be one of ${Object.keys(AGGREGATIONS).join(", ")}; got ${JSON.stringify(params.aggregation)}`,
      );
    }
    unit = chosen;
  }
  return { start: params.startTime, end: params.endTime, workspaceIds: params.workspaceIds, dimension, unit };
}

function dimensionsOf(dimension: UsageDimension, id: string, label: string | null): GranularUsageDimensions {
  switch (dimension) {
    case "workspace":
      return { workspace_id: id, workspace_name: label };
    case "project":
      return { project_id: id, project_name: label };
    case "user":
      return id === NO_DIMENSION_ID
        ? { user_id: null, user_email: null }
        : { user_id: id, user_email: label };
    case "api_key":
      return { api_key_short_key: label };
  }
}
