/**
 * A2A and MCP across processes on one database: an API-only process (which executes nothing)
 * takes the requests, another process runs the graphs. Tasks started through one are read,
 * answered and cancelled through the other; streams and tool calls see runs that execute elsewhere.
 */
import type { Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_PROTOCOL_GRAPHS, a2aClient, mcpClient } from "../support/agent-protocols.js";
import { waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let worker: TestApp;
let api: TestApp;
let seq = 0;

beforeAll(async () => {
  worker = await startTestApp({ graphConfigPath: AGENT_PROTOCOL_GRAPHS });
  api = await startTestApp({
    graphConfigPath: AGENT_PROTOCOL_GRAPHS,
    databaseUrl: worker.databaseUrl,
    bootstrapApiKey: worker.adminKey,
    role: "api",
  });
});
afterAll(async () => {
  await api?.stop();
  await worker?.stop();
});

function message(
  parts: ({ kind: "text"; text: string } | { kind: "data"; data: Record<string, unknown> })[],
  extra = {},
) {
  seq += 1;
  return { kind: "message" as const, messageId: `p-${seq}`, role: "user" as const, parts, ...extra };
}

describe("A2A across processes", () => {
  it("a task started on the API process is read and cancelled through the other", async () => {
    const onApi = await a2aClient(api.baseUrl, "sleepy", worker.adminKey);
    const onWorker = await a2aClient(worker.baseUrl, "sleepy", worker.adminKey);
    const started = (await onApi.sendMessage({
      message: message([{ kind: "data", data: { sleep_ms: 60_000 } }]),
      configuration: { blocking: false },
    })) as Task;
    await waitFor(
      () => onWorker.getTask({ id: started.id }),
      (task) => task.status.state === "working",
    );
    const canceled = await onApi.cancelTask({ id: started.id });
    expect(canceled.status.state).toBe("canceled");
    expect((await onWorker.getTask({ id: started.id })).status.state).toBe("canceled");
  });

  it("an interrupt asked through one process is answered through the other", async () => {
    const onApi = await a2aClient(api.baseUrl, "approval", worker.adminKey);
    const onWorker = await a2aClient(worker.baseUrl, "approval", worker.adminKey);
    const asked = (await onApi.sendMessage({ message: message([{ kind: "text", text: "launch" }]) })) as Task;
    expect(asked.status.state).toBe("input-required");
    const answered = (await onWorker.sendMessage({
      message: message([{ kind: "text", text: "go" }], { taskId: asked.id, contextId: asked.contextId }),
    })) as Task;
    expect(answered.status.state).toBe("completed");
    const got = await onApi.getTask({ id: asked.id });
    expect(got.status.state).toBe("completed");
    expect(got.artifacts?.[0]?.parts).toEqual([{ kind: "text", text: "decision: go" }]);
  });

  it("streams a run that executes in the other process", async () => {
    const onApi = await a2aClient(api.baseUrl, "agent", worker.adminKey);
    const events = [];
    for await (const event of onApi.sendMessageStream({
      message: message([{ kind: "text", text: "the time?" }]),
    }))
      events.push(event);
    const final = events.at(-1) as TaskStatusUpdateEvent;
    expect(final).toMatchObject({ kind: "status-update", final: true });
    expect(final.status.state).toBe("completed");
    expect(events.some((e) => e.kind === "artifact-update")).toBe(true);
  });
});

describe("MCP across processes", () => {
  it("a tool called on the API process runs in the other and answers", async () => {
    const client = await mcpClient(api.baseUrl, worker.adminKey);
    try {
      const result = await client.callTool({ name: "sleepy", arguments: { sleep_ms: 10 } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ messages: ["slept 10 ms"] });
    } finally {
      await client.close();
    }
  });
});
