/**
 * Tracing projects through the OFFICIAL `langsmith` SDK (createProject, readProject, hasProject,
 * listProjects, updateProject, deleteProject), and who may ingest into which workspace's projects.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSql, type Sql } from "../../server/store/db.js";
import { langsmithClient } from "../support/langsmith-client.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let sql: Sql;

beforeAll(async () => {
  t = await startTestApp();
  sql = createSql(t.databaseUrl, { max: 2, statementTimeoutMs: 0, applicationName: "tracing-projects-test" });
});
afterAll(async () => {
  await sql?.end();
  await t?.stop();
});

describe("tracing projects through the langsmith SDK", () => {
  it("creates, reads, lists, updates and deletes a project (with its runs)", async () => {
    const { client } = langsmithClient(t);
    const name = `project-${randomUUID()}`;
    const created = await client.createProject({
      projectName: name,
      description: "d",
      metadata: { env: "test" },
    });
    expect(created).toMatchObject({
      name,
      description: "d",
      extra: { metadata: { env: "test" } },
      run_count: 0,
    });
    await expect(client.createProject({ projectName: name })).rejects.toThrow(/409|already exists/);
    expect((await client.createProject({ projectName: name, upsert: true })).id).toBe(created.id);
    expect((await client.readProject({ projectName: name })).id).toBe(created.id);
    expect((await client.readProject({ projectId: created.id, includeStats: true })).name).toBe(name);
    expect(await client.hasProject({ projectName: name })).toBe(true);
    const listed = [];
    for await (const p of client.listProjects({ nameContains: name.slice(8, 20), referenceFree: true }))
      listed.push(p.id);
    expect(listed).toEqual([created.id]);

    const renamed = await client.updateProject(created.id, { name: `${name}-2`, metadata: { env: "prod" } });
    expect(renamed).toMatchObject({
      name: `${name}-2`,
      description: "d",
      extra: { metadata: { env: "prod" } },
    });

    const runId = randomUUID();
    await langsmithClient(t, { autoBatchTracing: false }).client.createRun({
      id: runId,
      name: "r",
      run_type: "chain",
      inputs: {},
      project_name: `${name}-2`,
    });
    expect((await client.readProject({ projectId: created.id })).run_count).toBe(1);
    await client.deleteProject({ projectId: created.id });
    await expect(client.readProject({ projectId: created.id })).rejects.toThrow(/404|not found/i);
    expect(await sql`select id from runs where id = ${runId}`).toHaveLength(0);
  });
});

describe("ingest tenancy and permissions", () => {
  it("keeps a key of workspace B out of workspace A's projects, and viewers out of ingest", async () => {
    const admin = t.client();
    const workspaceA = (await admin.iam.workspaces.getCurrentWorkspace({})).id;
    const workspaceB = (await admin.iam.workspaces.createWorkspace({ displayName: "ingest B" })).id;
    const keyB = (
      await admin.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [workspaceB], role: "admin" })
    ).key;
    const viewerKey = (
      await admin.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [workspaceA], role: "viewer" })
    ).key;
    const projectA = (await langsmithClient(t).client.createProject({ projectName: `a-${randomUUID()}` })).id;
    const id = randomUUID();
    const run = { id, name: "intruder", run_type: "chain", session_id: projectA };
    const send = (apiKey: string, tenantId?: string) =>
      t.fetch("/api/v1/runs/batch", {
        method: "POST",
        apiKey,
        ...(tenantId ? { tenantId } : {}),
        body: JSON.stringify({ post: [run] }),
      });

    const byId = await send(keyB);
    expect(byId.status).toBe(404);
    expect(((await byId.json()) as { detail: string }).detail).toContain(
      `tracing project ${projectA} not found`,
    );
    expect((await send(keyB, workspaceA)).status).toBe(403);
    const viewer = await send(viewerKey);
    expect(viewer.status).toBe(403);
    expect(((await viewer.json()) as { detail: string }).detail).toContain("runs:create");
    expect(await sql`select id from runs where id = ${id}`).toHaveLength(0);

    // B's own project of the same name is B's: nothing lands in A.
    const multipartB = await t.fetch("/api/v1/runs", {
      method: "POST",
      apiKey: keyB,
      body: JSON.stringify({ ...run, session_id: undefined, session_name: "shared-name" }),
    });
    expect(multipartB.status).toBe(202);
    const [stored] = await sql<{ workspace_id: string }[]>`select workspace_id from runs where id = ${id}`;
    expect(stored?.workspace_id).toBe(workspaceB);
  });
});
