import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { RunService } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { uuidv7 } from "../../../server/ids.js";
import type { TestApp } from "../../support/test-app.js";
import { ANSWERED, DENIED, isolationSuite, NOT_FOUND } from "./isolation-suite.js";

const runs = (c: AgentplaneClient) => createClient(RunService, c.transport);

/** Text only A's runs hold. */
const SECRET = "secret-of-A-runs";
/** Project every run of this suite goes to, in either workspace. */
const PROJECT = "isolation-runs";
/** Name, tag and metadata of the look-alike runs: two in A, one in B. */
const LOOK_ALIKE = "look-alike-run";
const SHARED = { shared: "isolation-runs" };

/** Sends root runs to a workspace through the batch ingest endpoint. */
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
      tags: ["shared"],
      extra: { metadata: SHARED },
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

/** A QueryRuns body both ways: the REST JSON, and Connect's answer in the same `{runs}` shape. */
const query = (body: Record<string, unknown>, connectBody: Record<string, unknown> = body) => ({
  rest: () => ({ method: "POST", path: "/api/v1/runs/query", body }),
  connect: (c: AgentplaneClient) =>
    runs(c)
      .queryRuns(connectBody)
      .then((r) => ({ runs: r.runs })),
});

/** A check that a QueryRuns answer holds `n` runs. */
const runCount = (n: number) => (answer: unknown) =>
  expect((answer as { runs: unknown[] }).runs).toHaveLength(n);

/**
 * Runs: a trace run of workspace A and its project, by id; look-alike runs in both workspaces (same
 * name, tags, metadata) for filters, query text and trace and tree filters; and a run id both
 * workspaces use, so that a trace or tree filter joining by id across workspaces would show B A's
 * run, or let it decide which of B's runs match.
 */
export const suite = isolationSuite({
  service: "runs",
  async setup({ t, workspaceA, workspaceB, adminA, adminB }) {
    const sharedId = uuidv7();
    const [runId, ...lookAlikesA] = await sendRuns(t, workspaceA, [
      { name: "secret-run", inputs: { secret: SECRET } },
      { name: LOOK_ALIKE, inputs: { question: "look-alike" } },
      { name: LOOK_ALIKE, inputs: { question: "look-alike" } },
      { id: sharedId, name: "A's twin run", inputs: { secret: SECRET } },
    ]);
    await sendRuns(t, workspaceB, [
      { name: LOOK_ALIKE, inputs: { question: "look-alike" } },
      { id: sharedId, name: "B's own run", inputs: { question: "B" } },
    ]);
    const projectOf = async (c: AgentplaneClient) =>
      (await runs(c).readRun({ runId: sharedId })).sessionId ?? "";
    return {
      runId: runId!,
      lookAlikesA: lookAlikesA.slice(0, 2),
      sharedId,
      projectId: await projectOf(adminA),
      projectIdB: await projectOf(adminB),
      workspaceA,
    };
  },
  secrets: (f) => [f.runId, ...f.lookAlikesA, f.projectId, SECRET, "secret-run", "A's twin run"],
  cases: [
    {
      ...NOT_FOUND,
      name: "RunService.ReadRun of A's run",
      rest: (f) => ({ method: "GET", path: `/api/v1/runs/${f.runId}` }),
      connect: (c, f) => runs(c).readRun({ runId: f.runId }),
    },
    {
      ...NOT_FOUND,
      name: "RunService.QueryRuns of A's project",
      rest: (f) => ({ method: "POST", path: "/api/v1/runs/query", body: { session: [f.projectId] } }),
      connect: (c, f) => runs(c).queryRuns({ session: [f.projectId] }),
    },
    {
      ...DENIED,
      name: "RunService.QueryRuns with x-tenant-id of A",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/runs/query",
        body: { id: [f.runId] },
        tenantId: f.workspaceA,
      }),
      connect: (c, f) => runs(c).queryRuns({ id: [f.runId] }),
    },
    {
      ...DENIED,
      name: "RunService.ValidateRunFilter with x-tenant-id of A",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/runs/query/validate",
        body: { filter: 'eq(name, "x")' },
        tenantId: f.workspaceA,
      }),
      connect: (c) => runs(c).validateRunFilter({ filter: 'eq(name, "x")' }),
    },
    {
      ...ANSWERED,
      name: "RunService.QueryRuns with a top-level or() filter",
      ...query({ filter: `or(eq(name, "nothing"), eq(name, "${LOOK_ALIKE}"))` }),
      expectB: runCount(1),
      expectA: runCount(2),
    },
    {
      ...ANSWERED,
      name: "RunService.QueryRuns with query text",
      ...query({ query: "LOOK-ALIKE" }),
      expectB: runCount(1),
      expectA: runCount(2),
    },
    {
      ...ANSWERED,
      name: "RunService.QueryRuns with search() of A's text",
      ...query({ filter: `or(eq(run_type, "nothing"), search("${SECRET}"))` }),
      expectB: runCount(0),
    },
    {
      ...ANSWERED,
      name: "RunService.QueryRuns with tags and metadata",
      ...query({
        filter: `or(has(tags, "shared"), and(eq(metadata_key, "shared"), eq(metadata_value, "isolation-runs")))`,
      }),
      expectB: runCount(2),
    },
    {
      ...ANSWERED,
      name: "RunService.QueryRuns with a trace_filter on A's root of a shared id",
      ...query(
        {
          trace_filter: `or(eq(name, "nothing"), eq(name, "A's twin run"))`,
          select: ["id", "name", "inputs"],
        },
        {
          traceFilter: `or(eq(name, "nothing"), eq(name, "A's twin run"))`,
          select: ["id", "name", "inputs"],
        },
      ),
      expectB: runCount(0),
    },
    {
      ...ANSWERED,
      name: "RunService.QueryRuns with a tree_filter on A's run of a shared id",
      ...query(
        { tree_filter: `or(eq(name, "nothing"), search("${SECRET}"))` },
        {
          treeFilter: `or(eq(name, "nothing"), search("${SECRET}"))`,
        },
      ),
      expectB: runCount(0),
    },
    {
      ...ANSWERED,
      name: "RunService.QueryRuns of B's project",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/runs/query",
        body: { session: [f.projectIdB], filter: 'neq(name, "x")' },
      }),
      connect: (c, f) =>
        runs(c)
          .queryRuns({ session: [f.projectIdB], filter: 'neq(name, "x")' })
          .then((r) => ({ runs: r.runs })),
      expectB: runCount(2),
      // A's admin cannot query B's project: its control is the 404 of the refused case above.
      expectA: false,
    },
    {
      ...ANSWERED,
      name: "RunService.QueryRuns by ids of A's runs and a shared id",
      rest: (f) => ({
        method: "POST",
        path: "/api/v1/runs/query",
        body: { id: [f.runId, ...f.lookAlikesA, f.sharedId] },
      }),
      connect: (c, f) =>
        runs(c)
          .queryRuns({ id: [f.runId, ...f.lookAlikesA, f.sharedId] })
          .then((r) => ({ runs: r.runs })),
      expectB: (answer) => expect(answer).toMatchObject({ runs: [{ name: "B's own run" }] }),
    },
    {
      ...ANSWERED,
      name: "RunService.QueryRuns by a trace both workspaces use",
      rest: (f) => ({ method: "POST", path: "/api/v1/runs/query", body: { trace: f.sharedId } }),
      connect: (c, f) =>
        runs(c)
          .queryRuns({ trace: f.sharedId })
          .then((r) => ({ runs: r.runs })),
      expectB: runCount(1),
    },
    {
      ...ANSWERED,
      name: "RunService.ReadRun of an id both workspaces use",
      rest: (f) => ({ method: "GET", path: `/api/v1/runs/${f.sharedId}` }),
      connect: (c, f) => runs(c).readRun({ runId: f.sharedId }),
      expectB: (run) => expect(run).toMatchObject({ name: "B's own run" }),
    },
  ],
  async verify({ adminA }, f) {
    const run = await runs(adminA).readRun({ runId: f.runId });
    expect(run.inputs).toEqual({ secret: SECRET });
    const shared = await runs(adminA).readRun({ runId: f.sharedId });
    expect(shared.name).toBe("A's twin run");
  },
});
