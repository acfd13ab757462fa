/**
 * A2A 1.0 beside 0.3 on the same endpoint: the official `@a2a-js/sdk` 1.x client (installed as
 * `@a2a-js/sdk-v1`) discovers the agent from its card's `supportedInterfaces` and speaks the 1.0
 * JSON-RPC methods (`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `ListTasks`,
 * `GetExtendedAgentCard`); plain JSON-RPC shows the wire (SCREAMING_SNAKE_CASE enums for 1.0
 * names, lowercase for 0.3 names) and `historyScope` in the body and in its header.
 */
import {
  type Client,
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk-v1/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_PROTOCOL_GRAPHS, a2aRpc, fetchWithKey } from "../support/agent-protocols.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let client: Client;
let seq = 0;

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: AGENT_PROTOCOL_GRAPHS });
  const fetchImpl = fetchWithKey(t.adminKey);
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  client = await factory.createFromUrl(t.baseUrl, "/.well-known/agent-card.json?assistant_id=agent");
});
afterAll(() => t?.stop());

/** The 1.0 enum values as the SDK's generated types number them. */
const ROLE_USER = 1;
const TASK_STATE_COMPLETED = 3;
const TASK_STATE_CANCELED = 5;

type SendRequest = Parameters<Client["sendMessage"]>[0];

/** A 1.0 user message request with one text part, as the SDK's types build it. */
function userText(text: string, contextId?: string): SendRequest {
  seq += 1;
  return {
    tenant: "",
    message: {
      messageId: `v1-${seq}-${Date.now()}`,
      contextId: contextId ?? "",
      taskId: "",
      role: ROLE_USER,
      parts: [{ content: { $case: "text", value: text }, filename: "", mediaType: "" }],
      extensions: [],
      referenceTaskIds: [],
    },
  } as unknown as SendRequest;
}

/** A JSON-RPC call to the agent with plain fetch. */
const rpc = (assistant: string, body: unknown, headers: Record<string, string> = {}) =>
  a2aRpc(t.baseUrl, assistant, t.adminKey, body, headers);

describe("the A2A 1.0 client", () => {
  it("finds the 1.0 JSON-RPC interface on the card, sends a message and reads the task", async () => {
    const card = (await (await t.fetch("/.well-known/agent-card.json?assistant_id=agent")).json()) as {
      supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[];
      capabilities: { extensions: { uri: string }[] };
    };
    expect(card.supportedInterfaces).toEqual([
      {
        url: expect.stringMatching(/\/a2a\/[0-9a-f-]{36}$/),
        protocolBinding: "JSONRPC",
        protocolVersion: "1.0",
      },
    ]);
    expect(card.capabilities.extensions.map((e) => e.uri)).toContain(
      "https://langchain.com/a2a/extensions/history-scope/v1",
    );

    const result = await client.sendMessage(userText("hello there"));
    const task = result as {
      id: string;
      contextId: string;
      status?: { state: number };
      artifacts: unknown[];
    };
    expect(task.status?.state).toBe(TASK_STATE_COMPLETED);
    expect(task.artifacts).toHaveLength(1);
    const again = await client.getTask({ id: task.id } as never);
    expect(again.id).toBe(task.id);
    expect(again.history.map((m) => m.role)).toEqual([1, 2]);
    expect((await client.getAgentCard()).name).toBe("agent");
    const extended = await rpc("agent", {
      jsonrpc: "2.0",
      id: 9,
      method: "GetExtendedAgentCard",
      params: {},
    });
    expect(extended.body.result).toMatchObject({
      name: "agent",
      supportedInterfaces: card.supportedInterfaces,
    });
  });

  it("streams a message as StreamResponses: the task, status updates, the artifact", async () => {
    const kinds: string[] = [];
    let lastState: number | undefined;
    for await (const event of client.sendMessageStream(userText("stream please"))) {
      const payload = (event as { payload?: { $case: string; value: { status?: { state: number } } } })
        .payload;
      if (!payload) continue;
      kinds.push(payload.$case);
      if (payload.$case === "statusUpdate") lastState = payload.value.status?.state;
    }
    expect(kinds[0]).toBe("task");
    expect(kinds).toContain("artifactUpdate");
    expect(kinds.at(-1)).toBe("statusUpdate");
    expect(lastState).toBe(TASK_STATE_COMPLETED);
  });

  it("lists a context's tasks newest first, and pages them", async () => {
    const first = (await client.sendMessage(userText("one"))) as { contextId: string; id: string };
    const second = (await client.sendMessage(userText("two", first.contextId))) as { id: string };
    const list = (extra: object) =>
      client.listTasks({
        tenant: "",
        contextId: first.contextId,
        status: 0,
        pageToken: "",
        ...extra,
      } as never);
    const listed = await list({});
    expect(listed.tasks.map((task) => task.id)).toEqual([second.id, first.id]);
    expect(listed.totalSize).toBe(2);
    const page = await list({ pageSize: 1 });
    expect(page.tasks.map((task) => task.id)).toEqual([second.id]);
    const rest = await list({ pageSize: 1, pageToken: page.nextPageToken });
    expect(rest.tasks.map((task) => task.id)).toEqual([first.id]);
    expect(rest.nextPageToken).toBe("");
  });

  it("cancels a running task", async () => {
    const fetchImpl = fetchWithKey(t.adminKey);
    const sleepy = await new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }).createFromUrl(t.baseUrl, "/.well-known/agent-card.json?assistant_id=sleepy");
    const started = (await sleepy.sendMessage({
      ...userText("ignored"),
      message: {
        ...(userText("ignored") as { message: object }).message,
        parts: [{ content: { $case: "data", value: { sleep_ms: 30_000 } }, filename: "", mediaType: "" }],
      },
      configuration: { acceptedOutputModes: [], historyLength: undefined, returnImmediately: true },
    } as unknown as SendRequest)) as { id: string };
    const canceled = await sleepy.cancelTask({ id: started.id } as never);
    expect(canceled.status?.state).toBe(TASK_STATE_CANCELED);
  });
});

describe("the wire", () => {
  it("answers 1.0 names in 1.0 shapes and 0.3 names in 0.3 shapes, on one endpoint", async () => {
    const message = (id: string, parts: unknown[]) => ({ messageId: id, role: "ROLE_USER", parts });
    const v1 = await rpc("agent", {
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: { message: message(`w-${Date.now()}`, [{ text: "hi" }]) },
    });
    expect(v1.body.result.task).toMatchObject({
      status: { state: "TASK_STATE_COMPLETED" },
      artifacts: [{ parts: [{ text: expect.any(String) }] }],
    });
    expect(v1.body.result.task).not.toHaveProperty("kind");
    expect(v1.body.result.task.history[0]).toMatchObject({ role: "ROLE_USER", parts: [{ text: "hi" }] });
    const got = await rpc("agent", {
      jsonrpc: "2.0",
      id: 2,
      method: "tasks/get",
      params: { id: v1.body.result.task.id },
    });
    expect(got.body.result).toMatchObject({ kind: "task", status: { state: "completed" } });
    const gotV1 = await rpc("agent", {
      jsonrpc: "2.0",
      id: 3,
      method: "GetTask",
      params: { id: got.body.result.id },
    });
    expect(gotV1.body.result).toMatchObject({
      id: got.body.result.id,
      status: { state: "TASK_STATE_COMPLETED" },
    });
  });

  it("historyScope task keeps only the task's own turn, from the body or the header", async () => {
    const send = (text: string, contextId: string | undefined, configuration?: object) =>
      rpc("agent", {
        jsonrpc: "2.0",
        id: 1,
        method: "SendMessage",
        params: {
          message: {
            messageId: `h-${seq++}-${Date.now()}`,
            role: "ROLE_USER",
            parts: [{ text }],
            ...(contextId ? { contextId } : {}),
          },
          ...(configuration ? { configuration } : {}),
        },
      });
    const first = (await send("first turn", undefined)).body.result.task;
    const whole = (await send("second turn", first.contextId)).body.result.task;
    expect(whole.history.map((m: { parts: { text: string }[] }) => m.parts[0]!.text).slice(0, 1)).toEqual([
      "first turn",
    ]);
    const scoped = (await send("third turn", first.contextId, { historyScope: "task" })).body.result.task;
    expect(scoped.history).toHaveLength(2);
    expect(scoped.history[0].parts[0].text).toBe("third turn");
    expect(scoped.history[1].role).toBe("ROLE_AGENT");

    const byHeader = await rpc(
      "agent",
      { jsonrpc: "2.0", id: 4, method: "GetTask", params: { id: scoped.id } },
      { "LangGraph-A2A-History-Scope": "task" },
    );
    expect(byHeader.body.result.history).toHaveLength(2);
    // The body's value wins over the header's.
    const bodyWins = await rpc(
      "agent",
      { jsonrpc: "2.0", id: 5, method: "GetTask", params: { id: scoped.id, historyScope: "context" } },
      { "LangGraph-A2A-History-Scope": "task" },
    );
    expect(bodyWins.body.result.history.length).toBeGreaterThan(2);
    // 0.3 names take it too.
    const legacy = await rpc("agent", {
      jsonrpc: "2.0",
      id: 6,
      method: "tasks/get",
      params: { id: scoped.id, historyScope: "task" },
    });
    expect(legacy.body.result.history.map((m: { role: string }) => m.role)).toEqual(["user", "agent"]);
  });

  it("refuses what it cannot do with JSON-RPC errors", async () => {
    const streamScoped = await fetchWithKey(t.adminKey)(`${t.baseUrl}/a2a/agent`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "SendStreamingMessage",
        params: {
          message: { messageId: "s-1", role: "ROLE_USER", parts: [{ text: "x" }] },
          configuration: { historyScope: "task" },
        },
      }),
    });
    const frame = (await streamScoped.text()).split("\n").find((line) => line.startsWith("data: "));
    expect(JSON.parse(frame!.slice(6))).toMatchObject({ id: 1, error: { code: -32602 } });
    const badScope = await rpc("agent", {
      jsonrpc: "2.0",
      id: 2,
      method: "GetTask",
      params: { id: "x", historyScope: "all" },
    });
    expect(badScope.body.error.code).toBe(-32602);
    const push = await rpc("agent", {
      jsonrpc: "2.0",
      id: 3,
      method: "CreateTaskPushNotificationConfig",
      params: {},
    });
    expect(push.body.error.code).toBe(-32003);
    const file = await rpc("agent", {
      jsonrpc: "2.0",
      id: 4,
      method: "SendMessage",
      params: {
        message: { messageId: "f-1", role: "ROLE_USER", parts: [{ url: "https://example.com/a.pdf" }] },
      },
    });
    expect(file.body.error.code).toBe(-32005);
    const badState = await rpc("agent", {
      jsonrpc: "2.0",
      id: 5,
      method: "ListTasks",
      params: { status: "DONE" },
    });
    expect(badState.body.error.code).toBe(-32602);
  });
});
