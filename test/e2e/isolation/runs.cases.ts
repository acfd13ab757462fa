import { Code, createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { RunService } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import { uuidv7 } from "../../../server/ids.js";
import { isolationSuite } from "./isolation-suite.js";

/** Runs: a trace run of workspace A, sent through the batch ingest endpoint, and its project. */
export const suite = isolationSuite({
  service: "runs",
  async setup({ t, workspaceA, adminA }) {
    const runId = uuidv7();
    const start = new Date();
    const iso = `${start.toISOString().slice(0, -1)}000Z`;
    const dottedOrder = `${iso.replace(/[-:.]/g, "").slice(0, -1)}Z${runId}`;
    const res = await t.fetch("/api/v1/runs/batch", {
      method: "POST",
      tenantId: workspaceA,
      body: JSON.stringify({
        post: [
          {
            id: runId,
            trace_id: runId,
            dotted_order: dottedOrder,
            name: "secret-run",
            run_type: "chain",
            start_time: iso,
            session_name: "isolation-runs",
            inputs: { secret: "A" },
          },
        ],
      }),
    });
    expect(res.status).toBe(202);
    const run = await createClient(RunService, adminA.transport).readRun({ runId });
    return { runId, projectId: run.sessionId ?? "", workspaceA };
  },
  cases: [
    {
      name: "RunService.ReadRun of A's run",
      rest: (f) => ({ method: "GET", path: `/api/v1/runs/${f.runId}` }),
      connect: (c, f) => createClient(RunService, c.transport).readRun({ runId: f.runId }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "RunService.QueryRuns of A's project",
      rest: (f) => ({ method: "POST", path: "/api/v1/runs/query", body: { session: [f.projectId] } }),
      connect: (c, f) => createClient(RunService, c.transport).queryRuns({ session: [f.projectId] }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "RunService.QueryRuns with x-tenant-id of A",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/runs/query",
        body: { id: [f.runId] },
        tenantId: f.workspaceA,
      }),
      connect: (c, f) => createClient(RunService, c.transport).queryRuns({ id: [f.runId] }),
      status: 403,
      code: Code.PermissionDenied,
    },
  ],
  async verify({ adminA }, f) {
    const run = await createClient(RunService, adminA.transport).readRun({ runId: f.runId });
    expect(run.inputs).toEqual({ secret: "A" });
  },
});
