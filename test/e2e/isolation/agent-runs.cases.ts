import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { RunService } from "../../../gen/agentplane/agents/v1/run_service_pb.js";
import { ThreadService } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { ANSWERED, DENIED, isolationSuite, NOT_FOUND } from "./isolation-suite.js";

const runs = (c: AgentplaneClient) => createClient(RunService, c.transport);
const threads = (c: AgentplaneClient) => createClient(ThreadService, c.transport);

/** Text only A's run holds (its input and metadata). */
const SECRET = "secret-of-A-runs";

/** Reads a server stream to its end (a refused stream throws at its first read). */
async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream) {
    // Nothing of A may arrive; the case checks what the call threw or answered.
  }
}

/**
 * Agent runs: a thread of workspace A with a finished run whose input and metadata hold A's
 * secret. B must neither read, join, stream, cancel nor delete it, nor start runs on A's thread,
 * and B's bulk cancel by status must not touch it.
 */
export const suite = isolationSuite({
  service: "agent-runs",
  async setup({ t, adminA, workspaceA }) {
    const thread = await threads(adminA).createThread({ metadata: { secret: SECRET } });
    const threadId = thread.threadId!;
    const res = await t.fetch(`/threads/${threadId}/runs/wait`, {
      method: "POST",
      tenantId: workspaceA,
      body: JSON.stringify({
        assistant_id: "agent",
        input: { messages: [{ role: "human", content: SECRET }] },
        metadata: { secret: SECRET },
      }),
    });
    expect(res.status).toBe(200);
    const [run] = (await (await t.fetch(`/threads/${threadId}/runs`, { tenantId: workspaceA })).json()) as {
      run_id: string;
    }[];
    return { threadId, runId: run!.run_id, workspaceA };
  },
  secrets: (f) => [f.runId, SECRET],
  cases: [
    {
      ...NOT_FOUND,
      name: "RunService.CreateRun on A's thread",
      rest: (f) => ({ method: "POST", path: `/threads/${f.threadId}/runs`, body: { assistant_id: "agent" } }),
      connect: (c, f) => runs(c).createRun({ threadId: f.threadId, assistantId: "agent" }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.StreamRun on A's thread",
      rest: (f) => ({
        method: "POST",
        path: `/threads/${f.threadId}/runs/stream`,
        body: { assistant_id: "agent" },
      }),
      connect: (c, f) => drain(runs(c).streamRun({ threadId: f.threadId, assistantId: "agent" })),
    },
    {
      ...NOT_FOUND,
      name: "RunService.WaitRun on A's thread",
      rest: (f) => ({
        method: "POST",
        path: `/threads/${f.threadId}/runs/wait`,
        body: { assistant_id: "agent" },
      }),
      connect: (c, f) => runs(c).waitRun({ threadId: f.threadId, assistantId: "agent" }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.ListRuns of A's thread",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}/runs` }),
      connect: (c, f) => runs(c).listRuns({ threadId: f.threadId }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.ListRuns of A's thread, filtered by status",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}/runs?status=success` }),
      connect: (c, f) => runs(c).listRuns({ threadId: f.threadId, status: "success" }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.GetRun",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}/runs/${f.runId}` }),
      connect: (c, f) => runs(c).getRun({ threadId: f.threadId, runId: f.runId }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.DeleteRun",
      rest: (f) => ({ method: "DELETE", path: `/threads/${f.threadId}/runs/${f.runId}` }),
      connect: (c, f) => runs(c).deleteRun({ threadId: f.threadId, runId: f.runId }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.CancelRun",
      rest: (f) => ({ method: "POST", path: `/threads/${f.threadId}/runs/${f.runId}/cancel` }),
      connect: (c, f) => runs(c).cancelRun({ threadId: f.threadId, runId: f.runId }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.CancelRuns by A's thread and run ids",
      rest: (f) => ({
        method: "POST",
        path: "/runs/cancel",
        body: { thread_id: f.threadId, run_ids: [f.runId] },
      }),
      connect: (c, f) => runs(c).cancelRuns({ filter: { threadId: f.threadId, runIds: [f.runId] } }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.JoinRun",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}/runs/${f.runId}/join` }),
      connect: (c, f) => runs(c).joinRun({ threadId: f.threadId, runId: f.runId }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.JoinRunStream",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}/runs/${f.runId}/stream` }),
      connect: (c, f) => drain(runs(c).joinRunStream({ threadId: f.threadId, runId: f.runId })),
    },
    {
      ...NOT_FOUND,
      name: "RunService.JoinRunStream on the stateless path",
      rest: (f) => ({ method: "GET", path: `/runs/${f.runId}/stream` }),
      connect: (c, f) => drain(runs(c).joinRunStream({ runId: f.runId })),
    },
    {
      ...NOT_FOUND,
      name: "RunService.JoinThreadStream",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}/stream` }),
      connect: (c, f) => drain(runs(c).joinThreadStream({ threadId: f.threadId })),
    },
    {
      ...DENIED,
      name: "RunService.GetRun with x-tenant-id of A",
      rest: (f) => ({
        method: "GET",
        path: `/threads/${f.threadId}/runs/${f.runId}`,
        tenantId: f.workspaceA,
      }),
      connect: (c, f) => runs(c).getRun({ threadId: f.threadId, runId: f.runId }),
    },
    {
      ...ANSWERED,
      name: "RunService.CancelRuns by status (B's own runs only)",
      rest: () => ({ method: "POST", path: "/runs/cancel", body: { status: "all" } }),
      connect: (c) => runs(c).cancelRuns({ filter: { status: "all" } }),
      expectA: false,
    },
  ],
  async verify({ t, workspaceA }, f) {
    const res = await t.fetch(`/threads/${f.threadId}/runs/${f.runId}`, { tenantId: workspaceA });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("success");
  },
});
