/**
 * The thread-centric streaming protocol ("protocol v2") through `@langchain/langgraph-sdk` 1.15's
 * `ThreadStream`, as `@langchain/react` drives it: over SSE (`POST /threads/{id}/commands` and
 * `POST /threads/{id}/stream/events`) and over the WebSocket on `/threads/{id}/stream/events`. A
 * chat reply streams as assembled messages and values; an `interrupt()` surfaces as an interrupt
 * that `input.respond` answers; state, checkpoints, the agent tree, forks and injected input are
 * commands; a stream reopened with `since` gets exactly what it missed; a WebSocket dropped mid-run
 * reconnects and the reply completes; and refusals are the protocol's error answers.
 *
 * What the JS reference server (`langgraphjs dev` 1.5.1) streams for the same graphs was compared
 * event by event (methods, namespaces and data, ids and times aside): the same, except that we also
 * give `messages` events the node that produced them (`params.node`, which the protocol defines and
 * the JS server leaves out) and our runs' metadata differs. The JS server answers
 * `state.listCheckpoints`, `state.fork` and `input.inject` with `unknown_command`.
 */
import { Client, ProtocolWebSocketTransportAdapter } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { sdkClient } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { ANSWER } from "./fixtures/protocol-graphs/chat-graph.js";

const GRAPHS = "test/e2e/fixtures/protocol-graphs/langgraph.json";

/** A protocol event as the SDK hands it over. */
interface ProtocolEvent {
  type: "event";
  event_id: string;
  seq: number;
  method: string;
  params: { namespace: string[]; timestamp: number; node?: string; data: Record<string, unknown> };
}

let t: TestApp;
let sdk: Client;

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: GRAPHS });
  sdk = sdkClient(t.baseUrl, t.adminKey);
});
afterAll(() => t?.stop());

/**
 * Collects a subscription's events into `into` until the root graph's lifecycle ends a run with one
 * of `ends` (a subscription replays the thread's kept events first, earlier runs' ends included).
 */
async function untilRunEnds(
  events: AsyncIterable<unknown>,
  into: ProtocolEvent[],
  ends: readonly string[] = ["completed", "failed", "interrupted"],
  ofRun?: () => string | undefined,
): Promise<void> {
  for await (const raw of events) {
    const event = raw as ProtocolEvent;
    into.push(event);
    const run = ofRun?.();
    if (
      event.method === "lifecycle" &&
      event.params.namespace.length === 0 &&
      ends.includes(String(event.params.data.event)) &&
      (ofRun === undefined || (run !== undefined && event.event_id.startsWith(`synth:${run}:`)))
    )
      return;
  }
}

/** A raw protocol command over HTTP, answered as JSON. */
async function command(threadId: string, body: unknown, apiKey = t.adminKey): Promise<Response> {
  return fetch(`${t.baseUrl}/threads/${threadId}/commands`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body: JSON.stringify(body),
  });
}

/** Whether `event` ends a run: the root graph's terminal lifecycle. */
function endsRun(event: ProtocolEvent | undefined): boolean {
  return (
    event?.method === "lifecycle" &&
    event.params.namespace.length === 0 &&
    ["completed", "failed", "interrupted"].includes(String(event.params.data.event))
  );
}

/**
 * The events of a raw SSE stream of the thread, read until `done` says so (by default, once the
 * stream has sent the end of a run) or the time is up.
 */
async function readStream(
  threadId: string,
  body: unknown,
  done: (events: ProtocolEvent[]) => boolean = (events) => endsRun(events.at(-1)),
): Promise<ProtocolEvent[]> {
  const controller = new AbortController();
  const res = await fetch(`${t.baseUrl}/threads/${threadId}/stream/events`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", "x-api-key": t.adminKey },
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  const events: ProtocolEvent[] = [];
  const decoder = new TextDecoder();
  let buffer = "";
  const timer = setTimeout(() => controller.abort(), 5_000);
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = frame.split("\n").find((line) => line.startsWith("data: "));
        if (data) events.push(JSON.parse(data.slice(6)) as ProtocolEvent);
        end = buffer.indexOf("\n\n");
      }
      if (done(events)) break;
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return events;
}

describe("over SSE", () => {
  it("streams a chat reply: the run's lifecycle, its values, and the answer assembled from its tokens", async () => {
    const thread = await sdk.threads.create();
    const stream = sdk.threads.stream(thread.thread_id, { assistantId: "chat" });
    const events: ProtocolEvent[] = [];
    const subscription = await stream.subscribe(["lifecycle", "values", "messages"]);
    const collected = untilRunEnds(subscription, events);
    const texts: Promise<string>[] = [];
    const messages = (async () => {
      for await (const message of stream.messages) texts.push(Promise.resolve(message.text));
    })();
    const { run_id: runId } = await stream.run.start({
      input: { messages: [{ role: "user", content: "hi" }] },
    });
    await collected;
    const output = (await stream.output) as { messages: { type: string; content: unknown }[] };
    await stream.close();
    await messages;

    expect(await Promise.all(texts)).toEqual([ANSWER]);
    expect(output.messages.map((m) => m.type)).toEqual(["human", "ai"]);
    // One event per seq, in order; the run's root lifecycle is the server's, named for its run.
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    const root = events.filter((e) => e.method === "lifecycle" && e.params.namespace.length === 0);
    expect(root.map((e) => e.params.data.event)).toEqual(["running", "completed"]);
    for (const e of root) expect(e.event_id).toBe(`synth:${runId}:${e.seq}`);
    const deltas = events
      .filter((e) => e.method === "messages" && e.params.data.event === "content-block-delta")
      .map((e) => (e.params.data.delta as { text: string }).text);
    expect(deltas.join("")).toBe(ANSWER);
    expect(events.filter((e) => e.method === "values").length).toBeGreaterThanOrEqual(2);
  });

  it("sends events on the wire as the protocol shapes them: state messages reduced, the node of a message", async () => {
    const thread = await sdk.threads.create();
    const stream = sdk.threads.stream(thread.thread_id, { assistantId: "chat" });
    const done = untilRunEnds(await stream.subscribe(["lifecycle"]), []);
    await stream.run.start({ input: { messages: [{ role: "user", content: "hi", id: "question" }] } });
    await done;
    await stream.close();
    const wire = await readStream(thread.thread_id, {
      channels: ["values", "messages", "updates", "lifecycle"],
    });
    expect(wire.find((e) => e.method === "messages")?.params.node).toBe("agent");
    expect(wire.filter((e) => e.method === "values").at(-1)?.params.data).toEqual({
      messages: [
        { type: "human", content: "hi", id: "question" },
        {
          type: "ai",
          content: [{ type: "text", text: ANSWER }],
          id: expect.any(String),
          response_metadata: expect.any(Object),
        },
      ],
    });
    const update = wire.find((e) => e.method === "updates");
    expect(update?.params.node).toBe("agent");
    expect(update?.params.data).toEqual({ messages: [expect.objectContaining({ type: "ai" })] });
  });

  it("surfaces an interrupt that input.respond answers, and a second stream reads the state", async () => {
    const thread = await sdk.threads.create();
    const stream = sdk.threads.stream(thread.thread_id, { assistantId: "approval" });
    const first: ProtocolEvent[] = [];
    const subscription = await stream.subscribe(["lifecycle", "input", "values"]);
    const firstRun = untilRunEnds(subscription, first);
    await stream.run.start({ input: { messages: [{ role: "user", content: "plan the release" }] } });
    await firstRun;
    const requested = first.find((e) => e.method === "input.requested");
    expect(requested?.params.data).toEqual({
      interrupt_id: expect.any(String),
      payload: { question: "Ship it on Friday?" },
      response_schema: expect.objectContaining({ type: "string", enum: ["yes", "no"] }),
    });
    expect(first.at(-1)?.params.data).toMatchObject({ event: "interrupted" });
    expect(stream.interrupts).toEqual([
      expect.objectContaining({
        interruptId: requested?.params.data.interrupt_id,
        payload: { question: "Ship it on Friday?" },
      }),
    ]);
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("interrupted");

    const second: ProtocolEvent[] = [];
    const resumed = untilRunEnds(await stream.subscribe(["lifecycle", "input", "values"]), second, [
      "completed",
    ]);
    await stream.input.respond({
      namespace: [],
      interrupt_id: String(requested?.params.data.interrupt_id),
      response: "yes",
    });
    await resumed;
    // The resuming run says first which interrupts it answers, then runs to the end.
    const answered = second.find((e) => e.method === "input.answered");
    expect(answered?.params.data).toEqual({ interrupt_ids: [requested?.params.data.interrupt_id] });
    expect(second.at(-1)?.params.data).toMatchObject({ event: "completed" });

    const reader = sdk.threads.stream(thread.thread_id, { assistantId: "approval" });
    const state = (await reader.state.get({ namespace: [] })) as {
      values: { decision: string; messages: { content: unknown }[] };
      checkpoint: { id: string };
    };
    expect(state.values.decision).toBe("yes");
    expect(state.values.messages.at(-1)?.content).toBe("Decision: yes");
    expect(state.checkpoint.id).toBe((await sdk.threads.getState(thread.thread_id)).checkpoint.checkpoint_id);
    const only = (await reader.state.get({ namespace: [], keys: ["decision"] })) as { values: unknown };
    expect(only.values).toEqual({ decision: "yes" });
    await reader.close();
    await stream.close();
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("idle");
  });

  it("lists checkpoints, forks from one, and draws the agent tree of a run", async () => {
    const thread = await sdk.threads.create();
    const stream = sdk.threads.stream(thread.thread_id, { assistantId: "chat" });
    const done = untilRunEnds(await stream.subscribe(["lifecycle"]), []);
    await stream.run.start({ input: { messages: [{ role: "user", content: "hi" }] } });
    await done;
    const { checkpoints } = (await stream.state.listCheckpoints({ limit: 10 })) as {
      checkpoints: { id: string; step: number; timestamp: string; node_name?: string }[];
    };
    const history = await sdk.threads.getHistory(thread.thread_id, { limit: 10 });
    expect(checkpoints.map((c) => c.id)).toEqual(history.map((h) => h.checkpoint.checkpoint_id));
    expect(checkpoints.map((c) => c.step)).toEqual([1, 0, -1]);
    expect(checkpoints[0]?.node_name).toBe("agent");
    expect(Date.parse(checkpoints[0]?.timestamp ?? "")).not.toBeNaN();
    const page = (await stream.state.listCheckpoints({ limit: 1, before: checkpoints[0]?.id })) as {
      checkpoints: { id: string }[];
    };
    expect(page.checkpoints.map((c) => c.id)).toEqual([checkpoints[1]?.id]);

    const tree = (await stream.agent.getTree({})) as {
      tree: { namespace: string[]; status: string; graph_name: string; children?: { graph_name: string }[] };
    };
    expect(tree.tree).toMatchObject({ namespace: [], status: "completed", graph_name: "chat" });
    expect(tree.tree.children?.map((c) => c.graph_name)).toEqual(["agent"]);

    // Forking from the input checkpoint (step -1) runs the graph again from there.
    const inputCheckpoint = checkpoints.find((c) => c.step === -1)?.id as string;
    let forkRun: string | undefined;
    const forkDone = untilRunEnds(await stream.subscribe(["lifecycle"]), [], ["completed"], () => forkRun);
    const forked = (await stream.state.fork({ checkpoint_id: inputCheckpoint })) as {
      run_id: string;
      thread_id: string;
    };
    forkRun = forked.run_id;
    expect(forked.thread_id).toBe(thread.thread_id);
    await forkDone;
    const run = await sdk.runs.get(thread.thread_id, forked.run_id);
    expect(run.status).toBe("success");
    // The fork is a second branch: the thread's head is a new answer whose history leads back to the
    // forked checkpoint, beside the first answer.
    const branch = await sdk.threads.getHistory(thread.thread_id, { limit: 10 });
    expect(branch[0]?.checkpoint.checkpoint_id).not.toBe(checkpoints[0]?.id);
    expect(branch.filter((h) => h.metadata?.step === 1)).toHaveLength(2);
    const parents = new Map(
      branch.map((h) => [h.checkpoint.checkpoint_id, h.parent_checkpoint?.checkpoint_id]),
    );
    let cursor: string | null | undefined = branch[0]?.checkpoint.checkpoint_id;
    const lineage: string[] = [];
    while (cursor) {
      lineage.push(cursor);
      cursor = parents.get(cursor) ?? undefined;
    }
    expect(lineage).toContain(inputCheckpoint);
    expect(lineage).not.toContain(checkpoints[0]?.id);
    await stream.close();
  });

  it("queues injected input behind the running reply", async () => {
    const thread = await sdk.threads.create();
    const stream = sdk.threads.stream(thread.thread_id, { assistantId: "slow_chat" });
    const events: ProtocolEvent[] = [];
    const subscription = await stream.subscribe(["lifecycle", "values"]);
    await stream.run.start({
      input: { messages: [{ role: "user", content: "first" }] },
      config: { configurable: { delay_ms: 10 } },
    });
    await stream.input.inject({ namespace: [], message: { role: "user", content: "and then?" } });
    await untilRunEnds(subscription, events);
    const state = await sdk.runs.join(
      thread.thread_id,
      (await sdk.runs.list(thread.thread_id))[0]?.run_id as string,
    );
    const messages = (state as { messages: { type: string; content: unknown }[] }).messages;
    expect(messages.map((m) => m.type)).toEqual(["human", "ai", "human", "ai"]);
    expect(messages[2]?.content).toBe("and then?");
    await stream.close();
  });

  it("replays from `since` exactly the events after it, and everything kept without it", async () => {
    const thread = await sdk.threads.create();
    const stream = sdk.threads.stream(thread.thread_id, { assistantId: "chat" });
    const done = untilRunEnds(await stream.subscribe(["lifecycle"]), []);
    await stream.run.start({ input: { messages: [{ role: "user", content: "hi" }] } });
    await done;
    await stream.close();
    const channels = ["values", "updates", "messages", "lifecycle", "checkpoints", "tasks"];
    const all = await readStream(thread.thread_id, { channels });
    expect(all.length).toBeGreaterThan(10);
    const cut = all[4]?.seq as number;
    const rest = await readStream(thread.thread_id, { channels, since: cut });
    expect(rest.map((e) => e.seq)).toEqual(all.slice(5).map((e) => e.seq));
    // A filter by channel and namespace: only the root graph's values.
    const rootValues = await readStream(
      thread.thread_id,
      { channels: ["values"], namespaces: [[]], depth: 0 },
      (events) => events.length >= 2,
    );
    expect(rootValues.map((e) => [e.method, e.params.namespace])).toEqual([
      ["values", []],
      ["values", []],
    ]);
  });

  it("answers refused commands with the protocol's errors, and bad requests with a 4xx naming the problem", async () => {
    const thread = await sdk.threads.create();
    const unknown = await command(thread.thread_id, { id: 7, method: "run.explode", params: {} });
    expect(unknown.status).toBe(200);
    expect(await unknown.json()).toMatchObject({ type: "error", id: 7, error: "unknown_command" });

    const notWaiting = await command(thread.thread_id, {
      id: 8,
      method: "input.respond",
      params: { namespace: [], interrupt_id: "nope", response: 1 },
    });
    expect(await notWaiting.json()).toMatchObject({
      type: "error",
      id: 8,
      error: expect.stringMatching(/no_such/),
    });

    const noAssistant = await command(thread.thread_id, {
      id: 9,
      method: "run.start",
      params: { input: {} },
    });
    expect(await noAssistant.json()).toMatchObject({
      type: "error",
      error: "invalid_argument",
      message: expect.stringContaining("assistant_id"),
    });

    const unknownAssistant = await command(thread.thread_id, {
      id: 10,
      method: "run.start",
      params: { assistant_id: "no_such_graph", input: {} },
    });
    expect(await unknownAssistant.json()).toMatchObject({
      type: "error",
      message: expect.stringContaining("no_such_graph"),
    });

    const socketOnly = await command(thread.thread_id, {
      id: 11,
      method: "subscription.subscribe",
      params: { channels: ["values"] },
    });
    expect(await socketOnly.json()).toMatchObject({ type: "error", error: "not_supported" });

    const noId = await command(thread.thread_id, { method: "state.get", params: {} });
    expect(noId.status).toBe(422);
    expect(((await noId.json()) as { detail: string }).detail).toContain("id");

    const badChannel = await fetch(`${t.baseUrl}/threads/${thread.thread_id}/stream/events`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": t.adminKey },
      body: JSON.stringify({ channels: ["valuez"] }),
    });
    expect(badChannel.status).toBe(422);
    expect(((await badChannel.json()) as { detail: string }).detail).toContain('"valuez" is not a channel');

    const missing = await fetch(`${t.baseUrl}/threads/${crypto.randomUUID()}/stream/events`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": t.adminKey },
      body: JSON.stringify({ channels: ["values"] }),
    });
    expect(missing.status).toBe(404);

    const noKey = await command(
      thread.thread_id,
      { id: 1, method: "state.get", params: {} },
      "ap_wrong_key_000000000000000000",
    );
    expect(noKey.status).toBe(401);
  });

  it("keeps workspaces apart: another workspace's stream of the same thread id sees none of its events", async () => {
    const admin = t.client();
    const other = (await admin.iam.workspaces.createWorkspace({ displayName: "protocol-b" })).id;
    const keyB = (
      await admin.iam.apiKeys.createApiKey({ kind: "service", workspaceIds: [other], role: "admin" })
    ).key;
    const thread = await sdk.threads.create();
    const stream = sdk.threads.stream(thread.thread_id, { assistantId: "chat" });
    const done = untilRunEnds(await stream.subscribe(["lifecycle"]), []);
    await stream.run.start({ input: { messages: [{ role: "user", content: "secret words" }] } });
    await done;
    await stream.close();
    const state = await command(
      thread.thread_id,
      { id: 1, method: "state.get", params: { namespace: [] } },
      keyB,
    );
    expect(await state.json()).toMatchObject({ type: "error", error: "no_such_run" });
    const events = await fetch(`${t.baseUrl}/threads/${thread.thread_id}/stream/events`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": keyB },
      body: JSON.stringify({ channels: ["values"] }),
    });
    expect(events.status).toBe(404);
  });
});

describe("over the WebSocket", () => {
  /** A ThreadStream over a WebSocket that authenticates with the `api_key` query parameter, as a browser must. */
  function socketStream(threadId: string, assistantId: string, sockets: WebSocket[] = []) {
    const client = new Client({ apiUrl: t.baseUrl, callerOptions: { maxRetries: 0 } });
    return client.threads.stream(threadId, {
      assistantId,
      transport: new ProtocolWebSocketTransportAdapter({
        apiUrl: t.baseUrl,
        threadId,
        reconnectDelayMs: () => 20,
        webSocketFactory: (url) => {
          const socket = new WebSocket(`${url}?api_key=${encodeURIComponent(t.adminKey)}`);
          sockets.push(socket);
          return socket as unknown as globalThis.WebSocket;
        },
      }),
    });
  }

  it("streams a chat reply on a thread its first run creates, and answers an interrupt", async () => {
    const threadId = crypto.randomUUID();
    const stream = socketStream(threadId, "approval");
    const events: ProtocolEvent[] = [];
    const subscription = await stream.subscribe(["lifecycle", "input", "messages", "values"]);
    const firstRun = untilRunEnds(subscription, events);
    await stream.run.start({ input: { messages: [{ role: "user", content: "plan" }] } });
    await firstRun;
    const deltas = events
      .filter((e) => e.method === "messages" && e.params.data.event === "content-block-delta")
      .map((e) => (e.params.data.delta as { text: string }).text);
    expect(deltas.join("")).toBe("Plan: ship on Friday.");
    const requested = events.find((e) => e.method === "input.requested");
    expect(requested?.params.data.payload).toEqual({ question: "Ship it on Friday?" });

    const resumed = untilRunEnds(await stream.subscribe(["lifecycle"]), [], ["completed"]);
    await stream.input.respond({
      namespace: [],
      interrupt_id: String(requested?.params.data.interrupt_id),
      response: "no",
    });
    await resumed;
    const state = (await stream.state.get({ namespace: [] })) as { values: { decision: string } };
    expect(state.values.decision).toBe("no");
    await stream.close();
  });

  it("reconnects after a dropped connection in the middle of a reply, which then completes", async () => {
    const thread = await sdk.threads.create();
    const sockets: WebSocket[] = [];
    const stream = socketStream(thread.thread_id, "slow_chat", sockets);
    const events: ProtocolEvent[] = [];
    const subscription = await stream.subscribe(["lifecycle", "messages"]);
    const done = untilRunEnds(subscription, events);
    await stream.run.start({
      input: { messages: [{ role: "user", content: "hi" }] },
      config: { configurable: { delay_ms: 30 } },
    });
    // Drop the connection once a few tokens arrived.
    while (events.filter((e) => e.params.data.event === "content-block-delta").length < 3)
      await new Promise((resolve) => setTimeout(resolve, 10));
    sockets[0]?.terminate();
    await done;
    expect(sockets.length).toBeGreaterThan(1);
    const deltas = events
      .filter((e) => e.method === "messages" && e.params.data.event === "content-block-delta")
      .map((e) => (e.params.data.delta as { text: string }).text);
    expect(deltas.join("")).toBe(ANSWER);
    expect(new Set(events.map((e) => e.event_id)).size).toBe(events.length);
    await stream.close();
  });

  it("closes with 4401 when the key is refused, and refuses pages of origins CORS does not allow", async () => {
    const threadId = crypto.randomUUID();
    const refused = new WebSocket(
      `${t.baseUrl.replace("http", "ws")}/threads/${threadId}/stream/events?api_key=nope`,
    );
    await new Promise((resolve) => refused.once("open", resolve));
    refused.send(JSON.stringify({ id: 1, method: "state.get", params: {} }));
    const code = await new Promise<number>((resolve) =>
      refused.once("close", (closeCode) => resolve(closeCode)),
    );
    expect(code).toBe(4401);

    const foreign = new WebSocket(`${t.baseUrl.replace("http", "ws")}/threads/${threadId}/stream/events`, {
      headers: { origin: "https://evil.example", "x-api-key": t.adminKey },
    });
    const status = await new Promise((resolve) =>
      foreign.once("unexpected-response", (_req, res) => resolve(res.statusCode)),
    );
    expect(status).toBe(403);
  });
});

describe("across processes", () => {
  it("streams from an API process the run that a command sent to another process started", async () => {
    const shared = { graphConfigPath: GRAPHS, databaseUrl: t.databaseUrl, bootstrapApiKey: t.adminKey };
    const api = await startTestApp({ ...shared, role: "api" });
    try {
      const thread = await sdk.threads.create();
      const onApi = sdkClient(api.baseUrl, t.adminKey).threads.stream(thread.thread_id, {
        assistantId: "chat",
      });
      const onFirst = sdk.threads.stream(thread.thread_id, { assistantId: "chat" });
      const events: ProtocolEvent[] = [];
      // The API process neither gets the command nor executes the run: its events reach it by NOTIFY.
      const done = untilRunEnds(await onApi.subscribe(["lifecycle", "messages", "values"]), events);
      await onFirst.run.start({ input: { messages: [{ role: "user", content: "hi" }] } });
      await done;
      const deltas = events
        .filter((e) => e.method === "messages" && e.params.data.event === "content-block-delta")
        .map((e) => (e.params.data.delta as { text: string }).text);
      expect(deltas.join("")).toBe(ANSWER);
      await onApi.close();
      await onFirst.close();
    } finally {
      await api.stop();
    }
  });
});
