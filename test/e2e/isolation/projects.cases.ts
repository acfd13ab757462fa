import { Code, createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { ProjectService } from "../../../gen/agentplane/tracing/v1/project_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { isolationSuite } from "./isolation-suite.js";

const projects = (c: AgentplaneClient) => createClient(ProjectService, c.transport);

/**
 * Tracing projects: a project of workspace A, by id. (Ingest into A's project by id with B's key is
 * covered in tracing-ingest.test.ts: ingest is REST-only, so it has no Connect half.)
 */
export const suite = isolationSuite({
  service: "projects",
  async setup({ adminA, workspaceA }) {
    const created = await projects(adminA).createProject({ session: { name: "secret project of A" } });
    return { workspaceA, id: created.id };
  },
  cases: [
    {
      name: "ProjectService.GetProject",
      rest: (f) => ({ method: "GET", path: `/api/v1/sessions/${f.id}` }),
      connect: (c, f) => projects(c).getProject({ sessionId: f.id }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ProjectService.UpdateProject",
      rest: (f) => ({ method: "PATCH", path: `/api/v1/sessions/${f.id}`, body: { name: "taken over" } }),
      connect: (c, f) => projects(c).updateProject({ sessionId: f.id, update: { name: "taken over" } }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ProjectService.DeleteProject",
      rest: (f) => ({ method: "DELETE", path: `/api/v1/sessions/${f.id}` }),
      connect: (c, f) => projects(c).deleteProject({ sessionId: f.id }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ProjectService.GetProject with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: `/api/v1/sessions/${f.id}`, tenantId: f.workspaceA }),
      connect: (c, f) => projects(c).getProject({ sessionId: f.id }),
      status: 403,
      code: Code.PermissionDenied,
    },
  ],
  async verify({ adminA }, f) {
    const project = await projects(adminA).getProject({ sessionId: f.id });
    expect(project.name).toBe("secret project of A");
    const listed = await projects(adminA).listProjects({ name: "secret project of A" });
    expect(listed.sessions.map((s) => s.id)).toEqual([f.id]);
  },
});
