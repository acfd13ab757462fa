import { create, fromJson } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  GranularUsageDimensionsSchema,
  GranularUsageRecordSchema,
  GranularUsageStrideSchema,
  type UsageService,
} from "../../../gen/agentplane/tracing/v1/usage_service_pb.js";
import type { Sql } from "../../store/db.js";
import { principalOf } from "../iam/principal.js";
import { computeGranularUsage } from "./granular-usage.js";

/** Dependencies of {@link createUsageService}. */
export interface UsageServiceDeps {
  sql: Sql;
}

/** UsageService: granular billable usage (traces per bucket and dimension) of the caller's organization. */
export function createUsageService({ sql }: UsageServiceDeps): ServiceImpl<typeof UsageService> {
  return {
    async getGranularUsage(request, ctx) {
      const result = await computeGranularUsage(sql, principalOf(ctx), {
        startTime: request.startTime && timestampDate(request.startTime),
        endTime: request.endTime && timestampDate(request.endTime),
        workspaceIds: request.workspaceIds,
        groupBy: request.groupBy,
        aggregation: request.aggregation,
      });
      return {
        stride: create(GranularUsageStrideSchema, result.stride),
        usage: result.usage.map((record) =>
          create(GranularUsageRecordSchema, {
            timeBucket: timestampFromDate(record.timeBucket),
            dimensions: create(GranularUsageDimensionsSchema, {
              workspaceId: dimensionValue(record.dimensions.workspace_id),
              workspaceName: dimensionValue(record.dimensions.workspace_name),
              projectId: dimensionValue(record.dimensions.project_id),
              projectName: dimensionValue(record.dimensions.project_name),
              userId: dimensionValue(record.dimensions.user_id),
              userEmail: dimensionValue(record.dimensions.user_email),
              apiKeyShortKey: dimensionValue(record.dimensions.api_key_short_key),
            }),
            traces: record.traces,
          }),
        ),
      };
    },
  };
}

/** A dimension key of the group as a Value (a string, or null); unset for the keys of other groups. */
function dimensionValue(value: string | null | undefined): Value | undefined {
  return value === undefined ? undefined : fromJson(ValueSchema, value);
}
