import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { BulkExportService } from "../../../gen/agentplane/export/v1/bulk_export_service_pb.js";
import { ProjectService } from "../../../gen/agentplane/tracing/v1/project_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { type S3Server, startS3Server } from "../../support/s3-server.js";
import { ANSWERED, DENIED, isolationSuite, listOf, NOT_FOUND } from "./isolation-suite.js";

const exports = (c: AgentplaneClient) => createClient(BulkExportService, c.transport);
/** A range far in the past: the export's runs find nothing and finish quickly. */
const RANGE = { startTime: { seconds: 1_000_000_000n }, endTime: { seconds: 1_000_086_400n } };

/**
 * Bulk exports: a destination, an export and its run of workspace A. The S3 server the
 * destination needs lives until `verify`.
 */
export const suite = isolationSuite<{
  s3: S3Server;
  workspaceA: string;
  destinationId: string;
  projectId: string;
  exportId: string;
  runId: string;
}>({
  service: "bulk-exports",
  async setup({ adminA, workspaceA }) {
    const s3 = await startS3Server({ buckets: ["isolation"] });
    const destination = await exports(adminA).createDestination({
      displayName: "A's bucket",
      config: { bucketName: "isolation", prefix: "a", endpointUrl: s3.endpoint },
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const project = await createClient(ProjectService, adminA.transport).createProject({
      session: { name: "exported project of A" },
    });
    const created = await exports(adminA).createBulkExport({
      bulkExportDestinationId: destination.id,
      sessionId: project.id,
      ...RANGE,
    });
    const { runs } = await exports(adminA).listBulkExportRuns({ bulkExportId: created.id });
    return {
      s3,
      workspaceA,
      destinationId: destination.id,
      projectId: project.id,
      exportId: created.id,
      runId: runs[0]?.id ?? "",
    };
  },
  secrets: (f) => [f.destinationId, f.exportId, f.projectId, "A's bucket"],
  cases: [
    {
      ...ANSWERED,
      name: "BulkExportService.ListDestinations",
      rest: () => ({ method: "GET", path: "/api/v1/bulk-exports/destinations" }),
      connect: (c) =>
        exports(c)
          .listDestinations({})
          .then((r) => r.destinations),
      expectB: listOf(0),
    },
    {
      ...ANSWERED,
      name: "BulkExportService.ListBulkExports",
      rest: () => ({ method: "GET", path: "/api/v1/bulk-exports" }),
      connect: (c) =>
        exports(c)
          .listBulkExports({})
          .then((r) => r.bulkExports),
      expectB: listOf(0),
    },
    {
      name: "BulkExportService.GetDestination",
      rest: (f) => ({ method: "GET", path: `/api/v1/bulk-exports/destinations/${f.destinationId}` }),
      connect: (c, f) => exports(c).getDestination({ destinationId: f.destinationId }),
      ...NOT_FOUND,
    },
    {
      name: "BulkExportService.UpdateDestination (new credentials)",
      rest: (f) => ({
        method: "PATCH",
        path: `/api/v1/bulk-exports/destinations/${f.destinationId}`,
        body: { credentials: { access_key_id: f.s3.accessKeyId, secret_access_key: f.s3.secretAccessKey } },
      }),
      connect: (c, f) =>
        exports(c).updateDestination({
          destinationId: f.destinationId,
          credentials: { accessKeyId: f.s3.accessKeyId, secretAccessKey: f.s3.secretAccessKey },
        }),
      ...NOT_FOUND,
    },
    {
      name: "BulkExportService.DeleteDestination",
      rest: (f) => ({ method: "DELETE", path: `/api/v1/bulk-exports/destinations/${f.destinationId}` }),
      connect: (c, f) => exports(c).deleteDestination({ destinationId: f.destinationId }),
      ...NOT_FOUND,
    },
    {
      name: "BulkExportService.CreateBulkExport to A's destination, of A's project",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/bulk-exports",
        body: {
          bulk_export_destination_id: f.destinationId,
          session_id: f.projectId,
          start_time: "2001-09-09T01:46:40Z",
          end_time: "2001-09-10T01:46:40Z",
        },
      }),
      connect: (c, f) =>
        exports(c).createBulkExport({
          bulkExportDestinationId: f.destinationId,
          sessionId: f.projectId,
          ...RANGE,
        }),
      ...NOT_FOUND,
    },
    {
      name: "BulkExportService.GetBulkExport",
      rest: (f) => ({ method: "GET", path: `/api/v1/bulk-exports/${f.exportId}` }),
      connect: (c, f) => exports(c).getBulkExport({ bulkExportId: f.exportId }),
      ...NOT_FOUND,
    },
    {
      name: "BulkExportService.UpdateBulkExport (cancel)",
      rest: (f) => ({
        method: "PATCH",
        path: `/api/v1/bulk-exports/${f.exportId}`,
        body: { status: "Cancelled" },
      }),
      connect: (c, f) => exports(c).updateBulkExport({ bulkExportId: f.exportId, status: "Cancelled" }),
      ...NOT_FOUND,
    },
    {
      name: "BulkExportService.ListBulkExportRuns",
      rest: (f) => ({ method: "GET", path: `/api/v1/bulk-exports/${f.exportId}/runs` }),
      connect: (c, f) => exports(c).listBulkExportRuns({ bulkExportId: f.exportId }),
      ...NOT_FOUND,
    },
    {
      name: "BulkExportService.ListScheduledExportRuns",
      rest: (f) => ({ method: "GET", path: `/api/v1/bulk-exports/runs?source_bulk_export_id=${f.exportId}` }),
      connect: (c, f) => exports(c).listScheduledExportRuns({ sourceBulkExportId: f.exportId }),
      ...NOT_FOUND,
    },
    {
      name: "BulkExportService.GetBulkExportRun",
      rest: (f) => ({ method: "GET", path: `/api/v1/bulk-exports/${f.exportId}/runs/${f.runId}` }),
      connect: (c, f) => exports(c).getBulkExportRun({ bulkExportId: f.exportId, runId: f.runId }),
      ...NOT_FOUND,
    },
    {
      name: "BulkExportService.ListBulkExports with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: "/api/v1/bulk-exports", tenantId: f.workspaceA }),
      connect: (c) => exports(c).listBulkExports({}),
      ...DENIED,
    },
  ],
  async verify({ adminA }, f) {
    try {
      const destination = await exports(adminA).getDestination({ destinationId: f.destinationId });
      expect(destination.displayName).toBe("A's bucket");
      const found = await exports(adminA).getBulkExport({ bulkExportId: f.exportId });
      expect(found.status).not.toBe("Cancelled");
      const { bulkExports } = await exports(adminA).listBulkExports({});
      expect(bulkExports.map((e) => e.id)).toEqual([f.exportId]);
    } finally {
      await f.s3.stop();
    }
  },
});
