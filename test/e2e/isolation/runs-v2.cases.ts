import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { RunService as V1RunService } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import { RunService } from "../../../gen/agentplane/tracing/v2/run_service_pb.js";
import { ThreadService } from "../../../gen/agentplane/tracing/v2/thread_service_pb.js";
import { TraceService } from "../../../gen/agentplane/tracing/v2/trace_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { uuidv7 } from "../../../server/ids.js";
import type { TestApp } from "../../support/test-app.js";
import { ANSWERED, DENIED, isolationSuite, NOT_FOUND } from "./isolation-suite.js";

const runs = (c: AgentplaneClient) => createClient(RunService, c.transport);
const traces = (c: AgentplaneClient) => createClient(TraceService, c.transport);
const threads = (c: AgentplaneClient) => createClient(ThreadService, c.transport);

/** Text only A's runs hold. */
const SECRET = "secret-of-A-v2-runs";
/** Project every run of this suite goes to, in either workspace. */
const PROJECT = "isolation-runs-v2";
/** The thread both workspaces' runs name. */
const THREAD = "isolation-shared-thread";
/** A window holding every run of the suite (they start on 2026-03-02). */
const WINDOW = { min_start_time: "2026-03-01T00:00:00Z", max_start_time: "2026-03-03T00:00:00Z" };
const CONNECT_WINDOW = {
  minStartTime: timestampFromDate(new Date(WINDOW.min_start_time)),
  maxStartTime: timestampFromDate(new Date(WINDOW.max_start_time)),
};
const ALL = ["ID", "NAME", "INPUTS", "METADATA", "PROJECT_ID", "TRACE_ID"];

/** Sends root runs of thread {@link THREAD} to a workspace through the batch ingest endpoint. */
async function sendRuns(
  t: TestApp,
  tenantId: string,
  items: { id?: string; name: string; inputs: object }[],
) {
  const ids: string[] = [];
  const post = items.map((item, i) => {
    const id = item.id ?? uuidv7();
    ids.push(id);
    const iso = `2026-03-02T12:00:0${i}.000000Z`;
    return {
      id,
      trace_id: id,
      dotted_order: `20260302T12000${i}000000Z${id}`,
      name: item.name,
      run_type: "chain",
      start_time: iso,
      end_time: iso,
      session_name: PROJECT,
      extra: { metadata: { thread_id: THREAD } },
      inputs: item.inputs,
    };
  });
  const res = await t.fetch("/api/v1/runs/batch", {
    method: "POST",
    tenantId,
    body: JSON.stringify({ post }),
  });
  expect(res.status).toBe(202);
  return ids;
}

/** A check that an answer holds `n` items (REST JSON, or Connect's answer in the same shape). */
const itemCount = (n: number) => (answer: unknown) =>
  expect((answer as { items: unknown[] }).items).toHaveLength(n);

/**
 * The v2 read API (RunService, TraceService, ThreadService of agentplane.tracing.v2): A's project,
 * runs, traces and thread by id are not found for B; B's queries of its own project, with filters
 * that would match A's runs and with a run id and thread id both workspaces use, show B only its own.
 */
export const suite = isolationSuite({
  service: "runs-v2",
  async setup({ t, workspaceA, workspaceB, adminA, adminB }) {
    const sharedId = uuidv7();
    const [runId] = await sendRuns(t, workspaceA, [
      { name: "secret-v2-run", inputs: { secret: SECRET } },
      { id: sharedId, name: "A's v2 twin run", inputs: { secret: SECRET } },
    ]);
    await sendRuns(t, workspaceB, [{ id: sharedId, name: "B's own v2 run", inputs: { question: "B" } }]);
    const projectOf = async (c: AgentplaneClient) =>
      (await createClient(V1RunService, c.transport).readRun({ runId: sharedId })).sessionId ?? "";
    return {
      runId: runId!,
      sharedId,
      projectId: await projectOf(adminA),
      projectIdB: await projectOf(adminB),
      workspaceA,
    };
  },
  secrets: (f) => [f.runId, f.projectId, SECRET, "secret-v2-run", "A's v2 twin run"],
  cases: [
    {
      ...NOT_FOUND,
      name: "v2 RunService.QueryRuns of A's project",
      rest: (f) => ({
        method: "POST",
        path: "/api/v2/runs/query",
        body: { project_ids: [f.projectId], ...WINDOW },
      }),
      connect: (c, f) => runs(c).queryRuns({ projectIds: [f.projectId], ...CONNECT_WINDOW }),
    },
    {
      ...DENIED,
      name: "v2 RunService.QueryRuns with x-tenant-id of A",
      rest: (f) => ({
        method: "POST",
        path: "/api/v2/runs/query",
        body: { project_ids: [f.projectId], ...WINDOW },
        tenantId: f.workspaceA,
      }),
      connect: (c, f) => runs(c).queryRuns({ projectIds: [f.projectId], ...CONNECT_WINDOW }),
    },
    {
      ...ANSWERED,
      name: "v2 RunService.QueryRuns of B's project with filters matching A's runs and a shared id",
      rest: (f) => ({
        method: "POST",
        path: "/api/v2/runs/query",
        body: {
          project_ids: [f.projectIdB],
          ids: [f.runId, f.sharedId],
          filter: `or(search("${SECRET}"), eq(name, "B's own v2 run"))`,
          tree_filter: `or(search("${SECRET}"), eq(name, "B's own v2 run"))`,
          trace_filter: `or(eq(name, "A's v2 twin run"), eq(name, "B's own v2 run"))`,
          selects: ALL,
          ...WINDOW,
        },
      }),
      connect: (c, f) =>
        runs(c)
          .queryRuns({
            projectIds: [f.projectIdB],
            ids: [f.runId, f.sharedId],
            filter: `or(search("${SECRET}"), eq(name, "B's own v2 run"))`,
            treeFilter: `or(search("${SECRET}"), eq(name, "B's own v2 run"))`,
            traceFilter: `or(eq(name, "A's v2 twin run"), eq(name, "B's own v2 run"))`,
            selects: ALL,
            ...CONNECT_WINDOW,
          })
          .then((r) => ({ items: r.items })),
      expectB: (answer) => expect(answer).toMatchObject({ items: [{ name: "B's own v2 run" }] }),
      // A's admin cannot query B's project: its control is the 404 of the refused case above.
      expectA: false,
    },
    {
      ...NOT_FOUND,
      name: "v2 RunService.GetRun of A's run in A's project",
      rest: (f) => ({
        method: "GET",
        path: `/api/v2/runs/${f.runId}?project_id=${f.projectId}&selects=INPUTS`,
      }),
      connect: (c, f) => runs(c).getRun({ runId: f.runId, projectId: f.projectId, selects: ["INPUTS"] }),
    },
    {
      ...NOT_FOUND,
      name: "v2 RunService.GetRun of A's run named in B's project",
      rest: (f) => ({ method: "GET", path: `/api/v2/runs/${f.runId}?project_id=${f.projectIdB}` }),
      connect: (c, f) => runs(c).getRun({ runId: f.runId, projectId: f.projectIdB }),
    },
    {
      ...ANSWERED,
      name: "v2 RunService.GetRun of an id both workspaces use",
      rest: (f) => ({
        method: "GET",
        path: `/api/v2/runs/${f.sharedId}?project_id=${f.projectIdB}&selects=NAME&selects=INPUTS`,
      }),
      connect: (c, f) =>
        runs(c).getRun({ runId: f.sharedId, projectId: f.projectIdB, selects: ["NAME", "INPUTS"] }),
      expectB: (run) => expect(run).toMatchObject({ name: "B's own v2 run" }),
      expectA: false,
    },
    {
      ...NOT_FOUND,
      name: "v2 RunService.GetRunUrl of A's run",
      rest: (f) => ({
        method: "GET",
        path: `/api/v2/runs/${f.runId}/url?project_id=${f.projectId}&trace_id=${f.runId}`,
      }),
      connect: (c, f) => runs(c).getRunUrl({ runId: f.runId, projectId: f.projectId, traceId: f.runId }),
    },
    {
      ...NOT_FOUND,
      name: "v2 TraceService.QueryTraces of A's project",
      rest: (f) => ({
        method: "POST",
        path: "/api/v2/traces/query",
        body: { project_id: f.projectId, ...WINDOW },
      }),
      connect: (c, f) => traces(c).queryTraces({ projectId: f.projectId, ...CONNECT_WINDOW }),
    },
    {
      ...ANSWERED,
      name: "v2 TraceService.QueryTraces of B's project with filters matching A's traces",
      rest: (f) => ({
        method: "POST",
        path: "/api/v2/traces/query",
        body: {
          project_id: f.projectIdB,
          trace_ids: [f.runId, f.sharedId],
          tree_filter: `or(search("${SECRET}"), eq(name, "B's own v2 run"))`,
          selects: [...ALL, "TOTAL_TOKENS"],
          ...WINDOW,
        },
      }),
      connect: (c, f) =>
        traces(c)
          .queryTraces({
            projectId: f.projectIdB,
            traceIds: [f.runId, f.sharedId],
            treeFilter: `or(search("${SECRET}"), eq(name, "B's own v2 run"))`,
            selects: [...ALL, "TOTAL_TOKENS"],
            ...CONNECT_WINDOW,
          })
          .then((r) => ({ items: r.items })),
      expectB: itemCount(1),
      expectA: false,
    },
    {
      ...NOT_FOUND,
      name: "v2 TraceService.ListTraceRuns of A's trace",
      rest: (f) => ({ method: "GET", path: `/api/v2/traces/${f.runId}/runs?project_id=${f.projectId}` }),
      connect: (c, f) => traces(c).listTraceRuns({ traceId: f.runId, projectId: f.projectId }),
    },
    {
      ...ANSWERED,
      name: "v2 TraceService.ListTraceRuns of a trace id both workspaces use",
      rest: (f) => ({
        method: "GET",
        path: `/api/v2/traces/${f.sharedId}/runs?project_id=${f.projectIdB}&selects=NAME&selects=INPUTS`,
      }),
      connect: (c, f) =>
        traces(c)
          .listTraceRuns({ traceId: f.sharedId, projectId: f.projectIdB, selects: ["NAME", "INPUTS"] })
          .then((r) => ({ items: r.items })),
      expectB: (answer) => expect(answer).toMatchObject({ items: [{ name: "B's own v2 run" }] }),
      expectA: false,
    },
    {
      ...NOT_FOUND,
      name: "v2 ThreadService.QueryThreads of A's project",
      rest: (f) => ({
        method: "POST",
        path: "/api/v2/threads/query",
        body: { project_id: f.projectId, ...WINDOW },
      }),
      connect: (c, f) => threads(c).queryThreads({ projectId: f.projectId, ...CONNECT_WINDOW }),
    },
    {
      ...ANSWERED,
      name: "v2 ThreadService.QueryThreads of B's project, a thread both workspaces use",
      rest: (f) => ({
        method: "POST",
        path: "/api/v2/threads/query",
        body: {
          project_id: f.projectIdB,
          tree_filter: `or(search("${SECRET}"), eq(name, "B's own v2 run"))`,
          ...WINDOW,
        },
      }),
      connect: (c, f) =>
        threads(c)
          .queryThreads({
            projectId: f.projectIdB,
            treeFilter: `or(search("${SECRET}"), eq(name, "B's own v2 run"))`,
            ...CONNECT_WINDOW,
          })
          .then((r) => ({ items: r.items })),
      expectB: (answer) => expect(answer).toMatchObject({ items: [{ count: 1 }] }),
      expectA: false,
    },
    {
      ...NOT_FOUND,
      name: "v2 ThreadService.ListThreadTraces of A's project",
      rest: (f) => ({ method: "GET", path: `/api/v2/threads/${THREAD}/traces?project_id=${f.projectId}` }),
      connect: (c, f) => threads(c).listThreadTraces({ threadId: THREAD, projectId: f.projectId }),
    },
    {
      ...ANSWERED,
      name: "v2 ThreadService.ListThreadTraces of a thread both workspaces use",
      rest: (f) => ({
        method: "GET",
        path: `/api/v2/threads/${THREAD}/traces?project_id=${f.projectIdB}&selects=NAME&selects=INPUTS`,
      }),
      connect: (c, f) =>
        threads(c)
          .listThreadTraces({ threadId: THREAD, projectId: f.projectIdB, selects: ["NAME", "INPUTS"] })
          .then((r) => ({ items: r.items })),
      expectB: (answer) => expect(answer).toMatchObject({ items: [{ name: "B's own v2 run" }] }),
      expectA: false,
    },
    {
      ...NOT_FOUND,
      name: "v2 ThreadService.GetThreadStats of A's project",
      rest: (f) => ({
        method: "GET",
        path: `/api/v2/threads/${THREAD}/stats?session_id=${f.projectId}&selects=TURNS`,
      }),
      connect: (c, f) =>
        threads(c).getThreadStats({ threadId: THREAD, sessionId: f.projectId, selects: ["TURNS"] }),
    },
    {
      ...ANSWERED,
      name: "v2 ThreadService.GetThreadStats of a thread both workspaces use",
      rest: (f) => ({
        method: "GET",
        path: `/api/v2/threads/${THREAD}/stats?session_id=${f.projectIdB}&selects=TURNS`,
      }),
      connect: (c, f) =>
        threads(c).getThreadStats({ threadId: THREAD, sessionId: f.projectIdB, selects: ["TURNS"] }),
      expectB: (answer) => expect(answer).toMatchObject({ turns: 1 }),
      expectA: false,
    },
  ],
  async verify({ adminA }, f) {
    const run = await runs(adminA).getRun({ runId: f.runId, projectId: f.projectId, selects: ["INPUTS"] });
    expect(run.inputs).toEqual({ secret: SECRET });
    const stats = await threads(adminA).getThreadStats({
      threadId: THREAD,
      sessionId: f.projectId,
      selects: ["TURNS"],
    });
    expect(stats.turns).toBe(2);
  },
});
