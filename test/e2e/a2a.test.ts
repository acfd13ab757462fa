/**
 * A2A through the `@a2a-js/sdk` client (protocol 0.3): agent cards, a conversation with the bundled
 * example agent over message/send and message/stream, an interrupt answered through A2A, tasks/get
 * with history, tasks/cancel of a running task, and JSON-RPC errors for what is wrong.
 */
import type { Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { TaskNotCancelableError } from "@a2a-js/sdk/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_PROTOCOL_GRAPHS, a2aClient, a2aRpc, fetchWithKey } from "../support/agent-protocols.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let seq = 0;

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: AGENT_PROTOCOL_GRAPHS });
});
afterAll(() => t?.stop());

/** A user message with text parts (and any data parts). */
function userMessage(
  text: string | undefined,
  extra: Partial<Message> = {},
  data?: Record<string, unknown>,
): Message {
  seq += 1;
  return {
    kind: "message",
    messageId: `m-${seq}-${Date.now()}`,
    role: "user",
    parts: [
      ...(text === undefined ? [] : [{ kind: "text" as const, text }]),
      ...(data === undefined ? [] : [{ kind: "data" as const, data }]),
    ],
    ...extra,
  };
}

function asTask(result: unknown): Task {
  expect((result as { kind: string }).kind).toBe("task");
  return result as Task;
}

function artifactText(task: Task): string | undefined {
  const part = task.artifacts?.[0]?.parts[0];
  return part?.kind === "text" ? part.text : undefined;
}

describe("agent card", () => {
  it("describes an assistant by graph id, with its JSON-RPC URL, and the client reads it", async () => {
    const res = await t.fetch("/.well-known/agent-card.json?assistant_id=agent");
    expect(res.status).toBe(200);
    const card = await res.json();
    expect(card).toMatchObject({
      protocolVersion: "0.3.0",
      name: "agent",
      description: "the bundled example agent",
      preferredTransport: "JSONRPC",
      capabilities: { streaming: true, pushNotifications: false },
      defaultInputModes: expect.arrayContaining(["text/plain", "application/json"]),
    });
    expect(card.url).toMatch(new RegExp(`^${t.baseUrl}/a2a/[0-9a-f-]{36}$`));
    const client = await a2aClient(t.baseUrl, "agent", t.adminKey);
    expect((await client.getAgentCard()).name).toBe("agent");
  });

  it("needs assistant_id, and answers 404 for an unknown assistant", async () => {
    const missing = await t.fetch("/.well-known/agent-card.json");
    expect(missing.status).toBe(422);
    expect((await missing.json()).detail).toMatch(/assistant_id is required/);
    const unknown = await t.fetch("/.well-known/agent-card.json?assistant_id=nope");
    expect(unknown.status).toBe(404);
    // A parameter a newer client adds is ignored (decision 14).
    const extra = await t.fetch("/.well-known/agent-card.json?assistant_id=agent&x=1");
    expect(extra.status).toBe(200);
  });

  it("answers 401 without an API key, on the card and on the endpoint", async () => {
    const card = await fetchWithKey(null)(`${t.baseUrl}/.well-known/agent-card.json?assistant_id=agent`);
    expect(card.status).toBe(401);
    expect((await card.json()).detail).toMatch(/API key/);
    const rpc = await a2aRpc(t.baseUrl, "agent", null, {
      jsonrpc: "2.0",
      id: 1,
      method: "tasks/get",
      params: {},
    });
    expect(rpc.status).toBe(401);
  });
});

describe("conversation with the bundled agent", () => {
  it("answers message/send, keeps the context across messages, and tasks/get shows the history", async () => {
    const client = await a2aClient(t.baseUrl, "agent", t.adminKey);
    const first = asTask(await client.sendMessage({ message: userMessage("hello") }));
    expect(first.status.state).toBe("completed");
    expect(first.contextId).toMatch(/^[0-9a-f-]{36}$/);
    expect(artifactText(first)).toBeTruthy();

    const second = asTask(
      await client.sendMessage({ message: userMessage("what time is it?", { contextId: first.contextId }) }),
    );
    expect(second.contextId).toBe(first.contextId);
    expect(second.id).not.toBe(first.id);
    expect(second.status.state).toBe("completed");
    expect(artifactText(second)).toMatch(/^The time is \d{4}-\d\d-\d\dT/);

    const got = await client.getTask({ id: second.id });
    expect(got.status.state).toBe("completed");
    // The tool call and the tool's answer are not conversation: user, agent, user, agent.
    expect(got.history?.map((m) => [m.role, m.parts[0]?.kind === "text" ? m.parts[0].text : ""])).toEqual([
      ["user", "hello"],
      ["agent", artifactText(first)],
      ["user", "what time is it?"],
      ["agent", artifactText(second)],
    ]);
    expect(got.history?.every((m) => m.contextId === first.contextId && m.taskId === second.id)).toBe(true);
    const last = await client.getTask({ id: second.id, historyLength: 1 });
    expect(last.history).toHaveLength(1);

    // The same context is the same thread, as the LangGraph API shows it.
    const thread = await (await t.fetch(`/threads/${first.contextId}/state`)).json();
    expect(thread.values.messages).toHaveLength(6);
  });

  it("streams message/stream: the task, working updates with the reply, the artifact, a final status", async () => {
    const client = await a2aClient(t.baseUrl, "agent", t.adminKey);
    const events: (Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message)[] = [];
    for await (const event of client.sendMessageStream({ message: userMessage("tell me the time") }))
      events.push(event);
    const [first, ...rest] = events;
    const task = asTask(first);
    expect(task.status.state).toBe("submitted");
    expect(task.history?.at(-1)?.parts).toEqual([{ kind: "text", text: "tell me the time" }]);
    const updates = rest.filter((e): e is TaskStatusUpdateEvent => e.kind === "status-update");
    expect(updates[0]?.status.state).toBe("working");
    const said = updates.flatMap((u) =>
      u.status.message?.parts[0]?.kind === "text" ? [u.status.message.parts[0].text] : [],
    );
    expect(said.some((text) => text.startsWith("The time is"))).toBe(true);
    const artifact = rest.find((e): e is TaskArtifactUpdateEvent => e.kind === "artifact-update");
    expect(artifact?.artifact.parts[0]).toMatchObject({
      kind: "text",
      text: expect.stringMatching(/^The time is/),
    });
    const final = rest.at(-1) as TaskStatusUpdateEvent;
    expect(final).toMatchObject({
      kind: "status-update",
      final: true,
      taskId: task.id,
      contextId: task.contextId,
    });
    expect(final.status.state).toBe("completed");
    expect(updates.filter((u) => u.final)).toHaveLength(1);
  });
});

describe("interrupt through A2A", () => {
  it("an interrupt is input-required with its question, and the answer resumes the same task", async () => {
    const client = await a2aClient(t.baseUrl, "approval", t.adminKey);
    const asked = asTask(await client.sendMessage({ message: userMessage("deploy v2") }));
    expect(asked.status.state).toBe("input-required");
    expect(asked.status.message?.role).toBe("agent");
    expect(asked.status.message?.parts).toEqual([
      { kind: "data", data: { question: 'approve "deploy v2"?' } },
    ]);
    expect((await client.getTask({ id: asked.id })).status.state).toBe("input-required");

    const answered = asTask(
      await client.sendMessage({
        message: userMessage("yes", { taskId: asked.id, contextId: asked.contextId }),
      }),
    );
    expect(answered.id).toBe(asked.id);
    expect(answered.contextId).toBe(asked.contextId);
    expect(answered.status.state).toBe("completed");
    expect(artifactText(answered)).toBe("decision: yes");

    const got = await client.getTask({ id: asked.id });
    expect(got.status.state).toBe("completed");
    expect(got.history?.map((m) => m.parts[0])).toEqual([
      { kind: "text", text: "deploy v2" },
      { kind: "text", text: "decision: yes" },
    ]);
    // The answer ran as a second run of the thread, resuming it with Command(resume).
    const runs = await (await t.fetch(`/threads/${asked.contextId}/runs`)).json();
    expect(runs).toHaveLength(2);
    expect(runs[0].kwargs.command).toEqual({ resume: "yes" });

    // A completed task takes no more messages.
    await expect(client.sendMessage({ message: userMessage("again", { taskId: asked.id }) })).rejects.toThrow(
      /only an input-required task takes a message/,
    );
  });

  it("takes one answer to a question: of two sent at once, one resumes the task and the other is refused", async () => {
    const client = await a2aClient(t.baseUrl, "approval", t.adminKey);
    const asked = asTask(await client.sendMessage({ message: userMessage("rotate keys") }));
    const answer = (text: string) =>
      a2aRpc(t.baseUrl, "approval", t.adminKey, {
        jsonrpc: "2.0",
        id: text,
        method: "message/send",
        params: { message: userMessage(text, { taskId: asked.id, contextId: asked.contextId }) },
      });
    const outcomes = await Promise.all([answer("first"), answer("second")]);
    const resumed = outcomes.filter((o) => o.body.result);
    const refused = outcomes.filter((o) => o.body.error);
    expect(resumed).toHaveLength(1);
    expect(resumed[0]?.body.result.status.state).toBe("completed");
    expect(refused.map((o) => o.body.error.code)).toEqual([-32602]);
    const runs = await (await t.fetch(`/threads/${asked.contextId}/runs`)).json();
    expect(runs).toHaveLength(2);
  });

  it("streams an interrupt as a final input-required status", async () => {
    const client = await a2aClient(t.baseUrl, "approval", t.adminKey);
    const events = [];
    for await (const event of client.sendMessageStream({ message: userMessage("ship it") }))
      events.push(event);
    const final = events.at(-1) as TaskStatusUpdateEvent;
    expect(final.final).toBe(true);
    expect(final.status.state).toBe("input-required");
    expect(final.status.message?.parts[0]).toEqual({
      kind: "data",
      data: { question: 'approve "ship it"?' },
    });
  });
});

describe("tasks/cancel", () => {
  it("cancels a working task (its run stops) and refuses to cancel it twice", async () => {
    const client = await a2aClient(t.baseUrl, "sleepy", t.adminKey);
    const started = asTask(
      await client.sendMessage({
        message: userMessage(undefined, {}, { sleep_ms: 60_000 }),
        configuration: { blocking: false },
      }),
    );
    expect(["submitted", "working"]).toContain(started.status.state);
    const canceled = await client.cancelTask({ id: started.id });
    expect(canceled.status.state).toBe("canceled");
    const run = await (await t.fetch(`/threads/${started.contextId}/runs/${started.id}`)).json();
    expect(run.status).toBe("interrupted");
    await expect(client.cancelTask({ id: started.id })).rejects.toBeInstanceOf(TaskNotCancelableError);
    const raw = await a2aRpc(t.baseUrl, "sleepy", t.adminKey, {
      jsonrpc: "2.0",
      id: "c",
      method: "tasks/cancel",
      params: { id: started.id },
    });
    expect(raw.body.error).toEqual({
      code: -32002,
      message: `task ${started.id} is canceled: only a submitted or working task can be canceled`,
    });
  });
});

describe("tasks/resubscribe", () => {
  it("follows a running task to its end, and answers an ended task with its final status", async () => {
    const client = await a2aClient(t.baseUrl, "sleepy", t.adminKey);
    const started = asTask(
      await client.sendMessage({
        message: userMessage(undefined, {}, { sleep_ms: 1_500 }),
        configuration: { blocking: false },
      }),
    );
    const events = [];
    for await (const event of client.resubscribeTask({ id: started.id })) events.push(event);
    expect(asTask(events[0]).id).toBe(started.id);
    const final = events.at(-1) as TaskStatusUpdateEvent;
    expect(final).toMatchObject({ kind: "status-update", final: true, taskId: started.id });
    expect(final.status.state).toBe("completed");
    expect(events.filter((e) => e.kind === "status-update" && e.final)).toHaveLength(1);

    const again = [];
    for await (const event of client.resubscribeTask({ id: started.id })) again.push(event);
    expect(again.map((e) => e.kind)).toEqual(["task", "artifact-update", "status-update"]);
    expect(asTask(again[0]).status.state).toBe("completed");
  });
});

describe("failed runs", () => {
  it("a run that fails is a failed task whose status message says why", async () => {
    const client = await a2aClient(t.baseUrl, "failing", t.adminKey);
    const task = asTask(await client.sendMessage({ message: userMessage(undefined, {}, { value: "x" }) }));
    expect(task.status.state).toBe("failed");
    expect(task.status.message?.parts).toEqual([{ kind: "text", text: "CustomError: Boo!" }]);
    expect(task.artifacts).toBeUndefined();
  });
});

describe("JSON-RPC errors", () => {
  const rpc = (body: unknown, headers?: Record<string, string>) =>
    a2aRpc(t.baseUrl, "agent", t.adminKey, body, headers);
  const send = (params: unknown) => rpc({ jsonrpc: "2.0", id: 7, method: "message/send", params });

  it("answers parse errors, invalid requests and unknown methods with their codes", async () => {
    const parse = await rpc("{not json");
    expect(parse.status).toBe(200);
    expect(parse.body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    expect((await rpc([])).body.error.code).toBe(-32600);
    expect((await rpc({ jsonrpc: "1.0", id: 1, method: "tasks/get" })).body).toMatchObject({
      id: 1,
      error: { code: -32600 },
    });
    expect((await rpc({ jsonrpc: "2.0", method: "tasks/get", params: { id: "x" } })).body.error.code).toBe(
      -32600,
    );
    const unknown = await rpc({ jsonrpc: "2.0", id: "u", method: "tasks/frobnicate", params: {} });
    expect(unknown.body).toMatchObject({
      id: "u",
      error: { code: -32601, message: expect.stringMatching(/not found/) },
    });
    const push = await rpc({ jsonrpc: "2.0", id: 2, method: "tasks/pushNotificationConfig/set", params: {} });
    expect(push.body.error.code).toBe(-32003);
    // The authenticated caller's extended card is the agent card.
    const card = await rpc({ jsonrpc: "2.0", id: 3, method: "agent/getAuthenticatedExtendedCard" });
    expect(card.body.result).toMatchObject({ name: "agent", protocolVersion: "0.3.0" });
  });

  it("answers invalid params, unknown tasks and file parts with their codes", async () => {
    expect((await send({})).body.error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/message/),
    });
    expect((await send({ message: { role: "user", messageId: "a", parts: [] } })).body.error.code).toBe(
      -32602,
    );
    expect(
      (
        await send({
          message: { role: "user", messageId: "a", parts: [{ kind: "text", text: "x" }], contextId: "nope" },
        })
      ).body.error,
    ).toMatchObject({ code: -32602, message: expect.stringMatching(/contextId/) });
    const file = await send({
      message: {
        role: "user",
        messageId: "a",
        parts: [{ kind: "file", file: { uri: "https://example.com/a" } }],
      },
    });
    expect(file.body.error.code).toBe(-32005);
    const missing = await rpc({
      jsonrpc: "2.0",
      id: 3,
      method: "tasks/get",
      params: { id: "018f0000-0000-7000-8000-000000000000" },
    });
    expect(missing.body).toMatchObject({ id: 3, error: { code: -32001 } });
    expect(
      (await rpc({ jsonrpc: "2.0", id: 4, method: "tasks/get", params: { id: "not-a-task" } })).body.error
        .code,
    ).toBe(-32001);
    expect(
      (await rpc({ jsonrpc: "2.0", id: 5, method: "tasks/get", params: { historyLength: -1, id: "x" } })).body
        .error.code,
    ).toBe(-32602);
  });

  it("needs Accept: text/event-stream for message/stream, and streams a failure as an error event", async () => {
    const params = { message: { role: "user", messageId: "s", parts: [{ kind: "text", text: "hi" }] } };
    const json = await rpc({ jsonrpc: "2.0", id: 9, method: "message/stream", params });
    expect(json.body).toMatchObject({
      id: 9,
      error: { code: -32600, message: expect.stringMatching(/text\/event-stream/) },
    });
    const res = await fetchWithKey(t.adminKey)(`${t.baseUrl}/a2a/agent`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 10, method: "message/stream", params: { message: {} } }),
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const data = (await res.text()).split("\n").filter((l) => l.startsWith("data:"));
    expect(data.map((l) => JSON.parse(l.slice(5)))).toEqual([
      { jsonrpc: "2.0", id: 10, error: { code: -32602, message: expect.any(String) } },
    ]);
  });

  it("a resumed task must be resumed in its own context", async () => {
    const client = await a2aClient(t.baseUrl, "approval", t.adminKey);
    const asked = asTask(await client.sendMessage({ message: userMessage("merge") }));
    const other = "018f0000-0000-7000-8000-000000000001";
    await expect(
      client.sendMessage({ message: userMessage("yes", { taskId: asked.id, contextId: other }) }),
    ).rejects.toThrow(/belongs to context/);
  });
});
