import { create, fromJson, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate, ValueSchema } from "@bufbuild/protobuf/wkt";
import {
  type BulkExport,
  type BulkExportDestination,
  BulkExportDestinationSchema,
  type BulkExportRun,
  BulkExportRunSchema,
  BulkExportSchema,
} from "../../../gen/agentplane/export/v1/bulk_export_service_pb.js";
import { partitionFolder } from "../../export/export-layout.js";
import type { DestinationRecord } from "../../store/export/bulk-export-destination-store.js";
import type { ExportRunRecord } from "../../store/export/bulk-export-run-store.js";
import type { ExportRecord } from "../../store/export/bulk-export-store.js";

/** The wire form of a destination: its location and the names of its credential fields, never their values. */
export function toDestinationMessage(d: DestinationRecord): BulkExportDestination {
  return create(BulkExportDestinationSchema, {
    id: d.id,
    tenantId: d.workspaceId,
    destinationType: d.destinationType,
    displayName: d.displayName,
    config: {
      bucketName: d.bucketName,
      prefix: d.prefix,
      ...(d.region !== null ? { region: d.region } : {}),
      ...(d.endpointUrl !== null ? { endpointUrl: d.endpointUrl } : {}),
      includeBucketInPrefix: d.includeBucketInPrefix,
    },
    credentialsKeys: d.credentialsKeys,
    createdAt: timestampFromDate(d.createdAt),
    updatedAt: timestampFromDate(d.updatedAt),
  });
}

/** The wire form of an export. */
export function toExportMessage(e: ExportRecord): BulkExport {
  return create(BulkExportSchema, {
    id: e.id,
    tenantId: e.workspaceId,
    bulkExportDestinationId: e.destinationId,
    sessionId: e.sessionId,
    startTime: timestampFromDate(e.startTime),
    ...(e.endTime !== null ? { endTime: timestampFromDate(e.endTime) } : {}),
    ...(e.filter !== null ? { filter: e.filter } : {}),
    exportFields: e.exportFields ?? [],
    ...(e.intervalHours !== null ? { intervalHours: e.intervalHours } : {}),
    format: "Parquet",
    formatVersion: e.formatVersion,
    compression: e.compression,
    status: e.status,
    sourceBulkExportId: fromJson(ValueSchema, e.sourceBulkExportId),
    createdAt: timestampFromDate(e.createdAt),
    updatedAt: timestampFromDate(e.updatedAt),
    ...(e.finishedAt !== null ? { finishedAt: timestampFromDate(e.finishedAt) } : {}),
  });
}

/** The wire form of an export run, with its progress; `destination` names its folder. */
export function toRunMessage(
  r: ExportRunRecord,
  e: ExportRecord,
  destination: DestinationRecord | undefined,
): BulkExportRun {
  const folder = destination
    ? partitionFolder(destination, {
        exportId: e.id,
        tenantId: e.workspaceId,
        sessionId: e.sessionId,
        day: r.startTime,
      })
    : "";
  return create(BulkExportRunSchema, {
    id: r.id,
    bulkExportId: r.bulkExportId,
    status: r.status,
    retryNumber: r.retryNumber,
    errors: r.errors as JsonObject,
    rowsExported: r.rowsWritten,
    metadata: {
      prefix: destination?.prefix ?? "",
      startTime: timestampFromDate(r.startTime),
      endTime: timestampFromDate(r.endTime),
      result: {
        rowsWritten: r.rowsWritten,
        exportedFiles: r.files.map((f) => f.key),
        exportPath: folder,
        ...(r.cursor ? { latestCursor: `${r.cursor.startTime}/${r.cursor.id}` } : {}),
        ...(r.manifestKey !== null ? { manifestPath: r.manifestKey } : {}),
        files: r.files.map((f) => ({ key: f.key, rows: f.rows, bytes: f.bytes, sha256: f.sha256 })),
      },
    },
    startTime: timestampFromDate(r.startTime),
    endTime: timestampFromDate(r.endTime),
    createdAt: timestampFromDate(r.createdAt),
    updatedAt: timestampFromDate(r.updatedAt),
    ...(r.finishedAt !== null ? { finishedAt: timestampFromDate(r.finishedAt) } : {}),
  });
}
