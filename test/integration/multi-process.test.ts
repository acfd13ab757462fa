/**
 * An API process and a worker process share one database: a job the API enqueues runs in the
 * worker, and SIGTERM to both loses no job.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentplaneProcess, startAgentplaneProcess } from "../support/agentplane-process.js";
import { createTestDatabase } from "../support/database.js";

const API_KEY = "ap_pt_multi_process_test_key_0123";

type Proc = AgentplaneProcess;

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let sql: postgres.Sql;
let dataDir: string;
const procs: Proc[] = [];

/** Starts `npm start`'s entry point with a role; resolves once it prints where it listens. */
async function startProcess(role: "api" | "worker"): Promise<Proc> {
  const proc = await startAgentplaneProcess({
    DATABASE_URL: db.url,
    AGENTPLANE_ROLE: role,
    AGENTPLANE_API_KEY: API_KEY,
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_SHUTDOWN_GRACE_MS: "5000",
  });
  procs.push(proc);
  return proc;
}

async function terminate(proc: Proc): Promise<string> {
  proc.child.kill("SIGTERM");
  return proc.exited;
}

beforeAll(async () => {
  db = await createTestDatabase();
  sql = postgres(db.url, { max: 2, onnotice: () => {} });
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-mp-"));
});

afterAll(async () => {
  for (const p of procs) p.child.kill("SIGKILL");
  await sql?.end();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

async function createWorkspaces(api: Proc, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${api.baseUrl}/api/v1/workspaces`, {
      method: "POST",
      headers: { "x-api-key": API_KEY, "content-type": "application/json" },
      body: JSON.stringify({ display_name: `mp ${i}` }),
    });
    expect(res.status).toBe(200);
    ids.push(((await res.json()) as { id: string }).id);
  }
  return ids;
}

async function deleteWorkspace(api: Proc, id: string): Promise<void> {
  const res = await fetch(`${api.baseUrl}/api/v1/workspaces/${id}`, {
    method: "DELETE",
    headers: { "x-api-key": API_KEY },
  });
  expect(res.status).toBe(200);
}

async function remaining(ids: string[]): Promise<number> {
  const rows = await sql`select count(*)::int as n from workspaces where id = any(${ids}::uuid[])`;
  return rows[0]!.n as number;
}

describe("api and worker processes", () => {
  it("a job enqueued by the API process runs in the worker process", async () => {
    const api = await startProcess("api");
    const worker = await startProcess("worker");
    expect((await fetch(`${worker.baseUrl}/ok`)).status).toBe(200);
    // The worker serves no API: only system, health and reflection.
    expect(
      (await fetch(`${worker.baseUrl}/api/v1/whoami`, { headers: { "x-api-key": API_KEY } })).status,
    ).toBe(404);

    const [id] = await createWorkspaces(api, 1);
    await deleteWorkspace(api, id!);
    await expect.poll(() => remaining([id!]), { timeout: 15_000 }).toBe(0);
    expect(await terminate(api)).toBe("exit 0");
    expect(await terminate(worker)).toBe("exit 0");
  });

  it("SIGTERM to both loses no job", async () => {
    const api = await startProcess("api");
    const worker = await startProcess("worker");
    const ids = await createWorkspaces(api, 30);
    await Promise.all(ids.map((id) => deleteWorkspace(api, id)));
    // Stop both while purges are queued or running.
    const codes = await Promise.all([terminate(api), terminate(worker)]);
    expect(codes).toEqual(["exit 0", "exit 0"]);

    const next = await startProcess("worker");
    await expect.poll(() => remaining(ids), { timeout: 30_000 }).toBe(0);
    const states = await sql`
      select state, count(*)::int as n from pgboss.job where name = 'workspace.purge' group by state`;
    const failed = states.find((s) => s.state === "failed");
    expect(failed).toBeUndefined();
    expect(await terminate(next)).toBe("exit 0");
  });
});
