import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/test-app.js";

const run = promisify(execFile);
const BUF = "node_modules/.bin/buf";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.stop());

async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await run(BUF, ["curl", ...args], { timeout: 20_000 });
  return stdout;
}

describe("system endpoints", () => {
  it("GET /ok answers without a key, lists each dependency, and checks Postgres with check_db", async () => {
    for (const path of ["/ok", "/ok?check_db=1", "/ok?check_db=true"]) {
      const res = await fetch(`${t.baseUrl}${path}`);
      expect(res.status, path).toBe(200);
      expect(await res.json()).toEqual({
        ok: true,
        services: { postgres: "ok", queue: "ok", workers: "ok" },
      });
    }
  });

  it("GET /info reports the version, role and flags", async () => {
    const res = await fetch(`${t.baseUrl}/info`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ version: "0.1.0", role: "all", flags: { auth: true } });
  });

  it("unknown paths answer 404 JSON and known paths with the wrong method 405", async () => {
    const unknown = await fetch(`${t.baseUrl}/nope`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: "no route for GET /nope" });
    const wrong = await fetch(`${t.baseUrl}/api/v1/whoami`, { method: "PUT" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toContain("GET");
  });
});

describe("buf curl against the server", () => {
  it("lists the agentplane services, health and reflection", async () => {
    const services = (await bufCurl("--list-services", t.baseUrl)).trim().split("\n");
    expect(services).toEqual(
      expect.arrayContaining([
        "agentplane.system.v1.SystemService",
        "agentplane.iam.v1.IdentityService",
        "agentplane.iam.v1.WorkspaceService",
        "agentplane.iam.v1.ApiKeyService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
      ]),
    );
  });

  it("calls an IAM RPC over gRPC, gRPC-Web and Connect with the same answer as REST", async () => {
    const rest = (await (await t.fetch("/api/v1/workspaces")).json()) as { id: string }[];
    for (const protocol of ["grpc", "grpcweb", "connect"]) {
      const out = await bufCurl(
        "--protocol",
        protocol,
        "-H",
        `x-api-key: ${t.adminKey}`,
        `${t.baseUrl}/agentplane.iam.v1.WorkspaceService/ListWorkspaces`,
      );
      const parsed = JSON.parse(out) as { workspaces: { id: string }[] };
      expect(
        parsed.workspaces.map((w) => w.id),
        protocol,
      ).toEqual(rest.map((w) => w.id));
    }
  });

  it("reports SERVING through gRPC health", async () => {
    const out = await bufCurl("--protocol", "grpc", `${t.baseUrl}/grpc.health.v1.Health/Check`);
    expect(JSON.parse(out)).toEqual({ status: "SERVING" });
    const one = await bufCurl(
      "--protocol",
      "grpc",
      "-d",
      '{"service":"agentplane.iam.v1.WorkspaceService"}',
      `${t.baseUrl}/grpc.health.v1.Health/Check`,
    );
    expect(JSON.parse(one)).toEqual({ status: "SERVING" });
  });
});
