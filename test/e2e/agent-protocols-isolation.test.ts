/**
 * Tenant isolation of the A2A and MCP routes (they are not RPCs, so the tenant-isolation table
 * cannot hold them): a key of workspace B neither sees nor runs workspace A's assistants, nor reads,
 * answers or cancels A's tasks; its MCP tools are its own workspace's. And with
 * `http.disable_a2a` / `http.disable_mcp` in the graphs file the routes are gone.
 */
import type { Task } from "@a2a-js/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AGENT_PROTOCOL_GRAPHS,
  a2aClient,
  a2aRpc,
  fetchWithKey,
  mcpClient,
} from "../support/agent-protocols.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let keyB: string;
let assistantA: string;
let taskA: Task;
let sleepingA: Task;

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: AGENT_PROTOCOL_GRAPHS });
  const admin = t.client();
  const workspaceB = (await admin.iam.workspaces.createWorkspace({ displayName: "B" })).id;
  keyB = (
    await admin.iam.apiKeys.createApiKey({
      kind: "service",
      workspaceIds: [workspaceB],
      role: "admin",
      organizationRole: "operator",
    })
  ).key;
  const created = await t.fetch("/assistants", {
    method: "POST",
    body: JSON.stringify({ graph_id: "approval", name: "secret-approver-of-A" }),
  });
  assistantA = (await created.json()).assistant_id;
  const clientA = await a2aClient(t.baseUrl, assistantA, t.adminKey);
  taskA = (await clientA.sendMessage({
    message: {
      kind: "message",
      messageId: "a1",
      role: "user",
      parts: [{ kind: "text", text: "secret plan" }],
    },
  })) as Task;
  expect(taskA.status.state).toBe("input-required");
  const sleepyA = await a2aClient(t.baseUrl, "sleepy", t.adminKey);
  sleepingA = (await sleepyA.sendMessage({
    message: {
      kind: "message",
      messageId: "a2",
      role: "user",
      parts: [{ kind: "data", data: { sleep_ms: 60_000 } }],
    },
    configuration: { blocking: false },
  })) as Task;
});
afterAll(() => t?.stop());

describe("A2A", () => {
  it("B gets 404 for A's assistant, on the card and on the endpoint", async () => {
    const card = await fetchWithKey(keyB)(
      `${t.baseUrl}/.well-known/agent-card.json?assistant_id=${assistantA}`,
    );
    expect(card.status).toBe(404);
    const rpc = await a2aRpc(t.baseUrl, assistantA, keyB, {
      jsonrpc: "2.0",
      id: 1,
      method: "tasks/get",
      params: { id: taskA.id },
    });
    expect(rpc.status).toBe(404);
    expect(JSON.stringify(rpc.body)).not.toContain("secret");
  });

  it("B cannot read, answer or cancel A's tasks through its own assistants", async () => {
    const call = (assistant: string, method: string, params: unknown) =>
      a2aRpc(t.baseUrl, assistant, keyB, { jsonrpc: "2.0", id: 2, method, params });
    for (const assistant of ["approval", "sleepy"]) {
      for (const id of [taskA.id, sleepingA.id]) {
        const got = await call(assistant, "tasks/get", { id });
        expect(got.body.error.code).toBe(-32001);
        expect(JSON.stringify(got.body)).not.toContain("secret");
        expect((await call(assistant, "tasks/cancel", { id })).body.error.code).toBe(-32001);
      }
    }
    const answer = await call("approval", "message/send", {
      message: {
        kind: "message",
        messageId: "b1",
        role: "user",
        parts: [{ kind: "text", text: "yes" }],
        taskId: taskA.id,
      },
    });
    expect(answer.body.error.code).toBe(-32001);
    // B cannot continue A's context either: it is a thread of A's workspace.
    const joined = await call("approval", "message/send", {
      message: {
        kind: "message",
        messageId: "b2",
        role: "user",
        parts: [{ kind: "text", text: "hi" }],
        contextId: taskA.contextId,
      },
    });
    expect(JSON.stringify(joined.body)).not.toContain("secret");

    // A's tasks are untouched.
    const clientA = await a2aClient(t.baseUrl, assistantA, t.adminKey);
    expect((await clientA.getTask({ id: taskA.id })).status.state).toBe("input-required");
    const sleepyA = await a2aClient(t.baseUrl, "sleepy", t.adminKey);
    expect(["submitted", "working"]).toContain((await sleepyA.getTask({ id: sleepingA.id })).status.state);
    expect((await sleepyA.cancelTask({ id: sleepingA.id })).status.state).toBe("canceled");
  });
});

describe("MCP", () => {
  it("B's tools are its workspace's assistants, and A's assistant is no tool of B's", async () => {
    const clientB = await mcpClient(t.baseUrl, keyB);
    try {
      const { tools } = await clientB.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["agent", "approval", "sleepy", "failing"]);
      await expect(clientB.callTool({ name: "secret-approver-of-A", arguments: {} })).rejects.toThrow(
        /not found/,
      );
    } finally {
      await clientB.close();
    }
    const clientA = await mcpClient(t.baseUrl, t.adminKey);
    try {
      expect((await clientA.listTools()).tools.map((tool) => tool.name)).toContain("secret-approver-of-A");
    } finally {
      await clientA.close();
    }
  });
});

describe("permissions", () => {
  it("a viewer reads cards, tasks and tools, but sends no message and calls no tool", async () => {
    const admin = t.client();
    const workspaceA = (await admin.iam.workspaces.getCurrentWorkspace({})).id;
    const viewer = (
      await admin.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [workspaceA], role: "viewer" })
    ).key;
    const card = await fetchWithKey(viewer)(
      `${t.baseUrl}/.well-known/agent-card.json?assistant_id=${assistantA}`,
    );
    expect(card.status).toBe(200);
    const got = await a2aRpc(t.baseUrl, assistantA, viewer, {
      jsonrpc: "2.0",
      id: 1,
      method: "tasks/get",
      params: { id: taskA.id },
    });
    expect(got.body.result.status.state).toBe("input-required");
    const sent = await a2aRpc(t.baseUrl, assistantA, viewer, {
      jsonrpc: "2.0",
      id: 2,
      method: "message/send",
      params: {
        message: { kind: "message", messageId: "v", role: "user", parts: [{ kind: "text", text: "x" }] },
      },
    });
    expect(sent.status).toBe(403);
    expect(sent.body.detail).toMatch(/threads:write/);
    const client = await mcpClient(t.baseUrl, viewer);
    try {
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await expect(client.callTool({ name: "sleepy", arguments: {} })).rejects.toThrow(/threads:write/);
    } finally {
      await client.close();
    }
  });
});

describe("disabled in the graphs file", () => {
  it("http.disable_a2a and http.disable_mcp take the routes away", async () => {
    const off = await startTestApp({
      graphConfigPath: AGENT_PROTOCOL_GRAPHS.replace(
        /agent-protocols\.json$/,
        "agent-protocols-disabled.json",
      ),
    });
    try {
      expect((await off.fetch("/.well-known/agent-card.json?assistant_id=agent")).status).toBe(404);
      const rpc = await a2aRpc(off.baseUrl, "agent", off.adminKey, {
        jsonrpc: "2.0",
        id: 1,
        method: "tasks/get",
      });
      expect(rpc.status).toBe(404);
      expect((await off.fetch("/mcp", { method: "POST", body: "{}" })).status).toBe(404);
      // The rest of the API is there.
      expect((await off.fetch("/assistants/search", { method: "POST", body: "{}" })).status).toBe(200);
    } finally {
      await off.stop();
    }
  });
});
