import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { FeedbackService } from "../../../gen/agentplane/tracing/v1/feedback_service_pb.js";
import { RunService } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import { RunStatsService } from "../../../gen/agentplane/tracing/v1/run_stats_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { uuidv7 } from "../../../server/ids.js";
import type { TestApp } from "../../support/test-app.js";
import { ANSWERED, DENIED, isolationSuite, listOf, NOT_FOUND } from "./isolation-suite.js";

const feedback = (c: AgentplaneClient) => createClient(FeedbackService, c.transport);
const runStats = (c: AgentplaneClient) => createClient(RunStatsService, c.transport);
const runs = (c: AgentplaneClient) => createClient(RunService, c.transport);

/** Text only A's feedback holds. */
const SECRET = "secret-of-A-feedback";

/** Posts one root run with `id` to a workspace. */
async function sendRun(t: TestApp, tenantId: string, id: string, name: string) {
  const iso = "2026-03-02T12:00:00.000000Z";
  const res = await t.fetch("/api/v1/runs/batch", {
    method: "POST",
    tenantId,
    body: JSON.stringify({
      post: [
        {
          id,
          trace_id: id,
          dotted_order: `20260302T120000000000Z${id}`,
          name,
          run_type: "chain",
          start_time: iso,
          end_time: iso,
          session_name: "isolation-feedback",
        },
      ],
    }),
  });
  expect(res.status).toBe(202);
}

/** A run-stats answer's run count, from REST (snake_case) or Connect (camelCase, zero omitted). */
const runCount = (answer: unknown) => {
  const a = answer as { run_count?: number; runCount?: number };
  return a.run_count ?? a.runCount ?? 0;
};

/**
 * Feedback and run stats: feedback of workspace A by id; a run id both workspaces use, each with
 * feedback of its own, for lists by run and for creating feedback on "A's" run from B; run stats of
 * A's project and runs.
 */
export const suite = isolationSuite({
  service: "feedback",
  async setup({ t, workspaceA, workspaceB, adminA, adminB }) {
    const runId = uuidv7();
    const sharedId = uuidv7();
    await sendRun(t, workspaceA, runId, "feedback run of A");
    await sendRun(t, workspaceA, sharedId, "A's twin feedback run");
    await sendRun(t, workspaceB, sharedId, "B's own feedback run");
    const feedbackId = (await feedback(adminA).createFeedback({ runId, key: "secret-key", comment: SECRET }))
      .id;
    const sharedFeedbackA = (
      await feedback(adminA).createFeedback({ runId: sharedId, key: "quality", comment: SECRET })
    ).id;
    await feedback(adminB).createFeedback({ runId: sharedId, key: "quality", comment: "B's" });
    const projectId = (await runs(adminA).readRun({ runId })).sessionId ?? "";
    return { runId, sharedId, feedbackId, sharedFeedbackA, projectId, workspaceA };
  },
  secrets: (f) => [f.runId, f.feedbackId, f.sharedFeedbackA, f.projectId, SECRET, "secret-key"],
  cases: [
    {
      ...NOT_FOUND,
      name: "FeedbackService.GetFeedback of A's feedback",
      rest: (f) => ({ method: "GET", path: `/api/v1/feedback/${f.feedbackId}` }),
      connect: (c, f) => feedback(c).getFeedback({ feedbackId: f.feedbackId }),
    },
    {
      ...NOT_FOUND,
      name: "FeedbackService.UpdateFeedback of A's feedback",
      rest: (f) => ({
        method: "PATCH",
        path: `/api/v1/feedback/${f.feedbackId}`,
        body: { comment: "B was here" },
      }),
      connect: (c, f) =>
        feedback(c).updateFeedback({ feedbackId: f.feedbackId, update: { comment: "B was here" } }),
    },
    {
      ...NOT_FOUND,
      name: "FeedbackService.DeleteFeedback of A's feedback",
      rest: (f) => ({ method: "DELETE", path: `/api/v1/feedback/${f.feedbackId}` }),
      connect: (c, f) => feedback(c).deleteFeedback({ feedbackId: f.feedbackId }),
    },
    {
      ...NOT_FOUND,
      name: "FeedbackService.CreateFeedback naming A's project",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/feedback",
        body: { run_id: f.sharedId, key: "k", session_id: f.projectId },
      }),
      connect: (c, f) => feedback(c).createFeedback({ runId: f.sharedId, key: "k", sessionId: f.projectId }),
    },
    {
      ...DENIED,
      name: "FeedbackService.CreateFeedback with x-tenant-id of A",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/feedback",
        body: { run_id: f.runId, key: "k" },
        tenantId: f.workspaceA,
      }),
      connect: (c, f) => feedback(c).createFeedback({ runId: f.runId, key: "k" }),
    },
    {
      ...DENIED,
      name: "FeedbackService.ListFeedback with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: `/api/v1/feedback?run=${f.runId}`, tenantId: f.workspaceA }),
      connect: (c, f) => feedback(c).listFeedback({ run: [f.runId] }),
    },
    {
      ...ANSWERED,
      name: "FeedbackService.ListFeedback of a run id both workspaces use",
      rest: (f) => ({ method: "GET", path: `/api/v1/feedback?run=${f.sharedId}&key=quality` }),
      connect: (c, f) =>
        feedback(c)
          .listFeedback({ run: [f.sharedId], key: ["quality"] })
          .then((r) => r.feedback),
      expectB: listOf(1),
    },
    {
      ...ANSWERED,
      name: "FeedbackService.ListFeedback of every run",
      rest: () => ({ method: "GET", path: "/api/v1/feedback" }),
      connect: (c) =>
        feedback(c)
          .listFeedback({})
          .then((r) => r.feedback),
    },
    {
      ...ANSWERED,
      name: "FeedbackService.CreateFeedback on a run id both workspaces use",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/feedback",
        body: { run_id: f.sharedId, key: "quality" },
      }),
      connect: (c, f) => feedback(c).createFeedback({ runId: f.sharedId, key: "quality" }),
      // A write: its control would change A. verify() checks A's run kept its stats.
      expectA: false,
    },
    {
      ...DENIED,
      name: "RunStatsService.GetRunStats with x-tenant-id of A",
      rest: (f) => ({ method: "POST", path: "/api/v1/runs/stats", body: {}, tenantId: f.workspaceA }),
      connect: (c) => runStats(c).getRunStats({}),
    },
    {
      ...NOT_FOUND,
      name: "RunStatsService.GetRunStats of A's project",
      rest: (f) => ({ method: "POST", path: "/api/v1/runs/stats", body: { session: [f.projectId] } }),
      connect: (c, f) => runStats(c).getRunStats({ session: [f.projectId] }),
    },
    {
      ...ANSWERED,
      name: "RunStatsService.GetRunStats of A's run ids",
      rest: (f) => ({ method: "POST", path: "/api/v1/runs/stats", body: { id: [f.runId, f.sharedId] } }),
      connect: (c, f) => runStats(c).getRunStats({ id: [f.runId, f.sharedId] }),
      expectB: (answer) => expect(runCount(answer)).toBe(1),
      expectA: (answer) => expect(runCount(answer)).toBe(2),
    },
  ],
  async verify({ adminA }, f) {
    const kept = await feedback(adminA).getFeedback({ feedbackId: f.feedbackId });
    expect(kept.comment).toBe(SECRET);
    const shared = await runs(adminA).readRun({ runId: f.sharedId });
    expect(shared.feedbackStats).toEqual({ quality: { n: 1, avg: null, values: {} } });
  },
});
