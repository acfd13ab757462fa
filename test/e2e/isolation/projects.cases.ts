import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { ProjectService } from "../../../gen/agentplane/tracing/v1/project_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { uuidv7 } from "../../../server/ids.js";
import { ANSWERED, DENIED, isolationSuite, listOf, NOT_FOUND } from "./isolation-suite.js";

const projects = (c: AgentplaneClient) => createClient(ProjectService, c.transport);

/** Metadata of the look-alike projects: two in A, one in B. */
const SHARED = { shared: "isolation-projects" };
const LOOK_ALIKE = "iso-look-alike";
const metadataQuery = encodeURIComponent(JSON.stringify(SHARED));

/** Run counts of listed projects, from REST (snake_case) or Connect (camelCase, zero omitted). */
const runCounts = (list: unknown) =>
  (list as { run_count?: number; runCount?: number }[]).map((p) => p.run_count ?? p.runCount ?? 0);

/**
 * Tracing projects: a project of workspace A, by id; look-alike projects in both workspaces (same
 * names and metadata; A's with a run) for the list filters and the statistics. (Ingest into A's
 * project by id with B's key is covered in tracing-ingest.test.ts: ingest is REST-only, so it has
 * no Connect half.)
 */
export const suite = isolationSuite({
  service: "projects",
  async setup({ t, adminA, adminB, workspaceA }) {
    const created = await projects(adminA).createProject({ session: { name: "secret project of A" } });
    const lookAlike = (n: number) => ({
      session: { name: `${LOOK_ALIKE}-${n}`, extra: { metadata: SHARED } },
    });
    const lookAlikesA = [
      (await projects(adminA).createProject(lookAlike(1))).id,
      (await projects(adminA).createProject(lookAlike(2))).id,
    ];
    await projects(adminB).createProject(lookAlike(1));
    const runId = uuidv7();
    const iso = "2026-03-02T12:00:00.000000Z";
    const res = await t.fetch("/api/v1/runs/batch", {
      method: "POST",
      tenantId: workspaceA,
      body: JSON.stringify({
        post: [
          {
            id: runId,
            trace_id: runId,
            dotted_order: `20260302T120000000000Z${runId}`,
            name: "project statistics run",
            run_type: "chain",
            start_time: iso,
            end_time: iso,
            session_name: `${LOOK_ALIKE}-1`,
          },
        ],
      }),
    });
    expect(res.status).toBe(202);
    return { workspaceA, id: created.id, lookAlikesA };
  },
  secrets: (f) => [f.id, ...f.lookAlikesA, "secret project of A"],
  cases: [
    {
      ...NOT_FOUND,
      name: "ProjectService.GetProject",
      rest: (f) => ({ method: "GET", path: `/api/v1/sessions/${f.id}` }),
      connect: (c, f) => projects(c).getProject({ sessionId: f.id }),
    },
    {
      ...NOT_FOUND,
      name: "ProjectService.UpdateProject",
      rest: (f) => ({ method: "PATCH", path: `/api/v1/sessions/${f.id}`, body: { name: "taken over" } }),
      connect: (c, f) => projects(c).updateProject({ sessionId: f.id, update: { name: "taken over" } }),
    },
    {
      ...NOT_FOUND,
      name: "ProjectService.DeleteProject",
      rest: (f) => ({ method: "DELETE", path: `/api/v1/sessions/${f.id}` }),
      connect: (c, f) => projects(c).deleteProject({ sessionId: f.id }),
    },
    {
      ...DENIED,
      name: "ProjectService.GetProject with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: `/api/v1/sessions/${f.id}`, tenantId: f.workspaceA }),
      connect: (c, f) => projects(c).getProject({ sessionId: f.id }),
    },
    {
      ...DENIED,
      name: "ProjectService.ListProjects with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: "/api/v1/sessions", tenantId: f.workspaceA }),
      connect: (c) => projects(c).listProjects({}),
    },
    {
      ...ANSWERED,
      name: "ProjectService.ListProjects by name, with statistics",
      rest: () => ({ method: "GET", path: `/api/v1/sessions?name=${LOOK_ALIKE}-1` }),
      connect: (c) =>
        projects(c)
          .listProjects({ name: `${LOOK_ALIKE}-1` })
          .then((r) => r.sessions),
      expectB: (list) => expect(runCounts(list)).toEqual([0]),
      expectA: (list) => expect(runCounts(list)).toEqual([1]),
    },
    {
      ...ANSWERED,
      name: "ProjectService.ListProjects by name_contains",
      rest: () => ({ method: "GET", path: "/api/v1/sessions?name_contains=LOOK-ALIKE" }),
      connect: (c) =>
        projects(c)
          .listProjects({ nameContains: "LOOK-ALIKE" })
          .then((r) => r.sessions),
      expectB: listOf(1),
      expectA: listOf(2),
    },
    {
      ...ANSWERED,
      name: "ProjectService.ListProjects by metadata",
      rest: () => ({ method: "GET", path: `/api/v1/sessions?metadata=${metadataQuery}` }),
      connect: (c) =>
        projects(c)
          .listProjects({ metadata: JSON.stringify(SHARED) })
          .then((r) => r.sessions),
      expectB: listOf(1),
      expectA: listOf(2),
    },
    {
      ...ANSWERED,
      name: "ProjectService.ListProjects by A's project ids",
      rest: (f) => ({
        method: "GET",
        path: `/api/v1/sessions?${[f.id, ...f.lookAlikesA].map((id) => `id=${id}`).join("&")}`,
      }),
      connect: (c, f) =>
        projects(c)
          .listProjects({ id: [f.id, ...f.lookAlikesA] })
          .then((r) => r.sessions),
      expectB: listOf(0),
    },
    {
      ...ANSWERED,
      name: "ProjectService.ListProjects by A's name",
      rest: () => ({ method: "GET", path: "/api/v1/sessions?name_contains=secret%20project" }),
      connect: (c) =>
        projects(c)
          .listProjects({ nameContains: "secret project" })
          .then((r) => r.sessions),
      expectB: listOf(0),
    },
    {
      ...ANSWERED,
      name: "ProjectService.ListProjects without a reference dataset",
      rest: () => ({ method: "GET", path: "/api/v1/sessions?reference_free=true" }),
      connect: (c) =>
        projects(c)
          .listProjects({ referenceFree: true })
          .then((r) => r.sessions),
    },
  ],
  async verify({ adminA }, f) {
    const project = await projects(adminA).getProject({ sessionId: f.id });
    expect(project.name).toBe("secret project of A");
    const listed = await projects(adminA).listProjects({ name: "secret project of A" });
    expect(listed.sessions.map((s) => s.id)).toEqual([f.id]);
  },
});
