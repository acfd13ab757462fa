/**
 * Run streams through the official `@langchain/langgraph-sdk`: every stream mode alone and mixed,
 * subgraph events (`<mode>|<namespace>`), event ids, the run's location headers, and `RemoteGraph`
 * from `@langchain/langgraph/remote` driving the same server. Sequences are asserted exactly where
 * the wire contract fixes them (agent-server-api.md §1.6), checked against the JS reference server.
 */
import { fromJson, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { Command } from "@langchain/langgraph";
import { RemoteGraph } from "@langchain/langgraph/remote";
import type { Client, StreamMode } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunService } from "../../gen/agentplane/agents/v1/run_service_pb.js";
import {
  collect,
  collectAll,
  eventNames,
  human,
  humanOut,
  type RunsApp,
  type StreamPart,
  startRunsApp,
  waitFor,
  withoutIds,
} from "../support/runs-app.js";

let app: RunsApp;
let sdk: Client;

beforeAll(async () => {
  app = await startRunsApp();
  sdk = app.sdk;
});
afterAll(async () => {
  await app?.t.stop();
});

/**
 * The reply of the chat fixture's fake model, serialised as LangChain.js does. `tool_call_chunks`
 * is left open: it is there when the model streamed (an AIMessageChunk), which depends on the modes
 * a server asks of the graph, not on the contract.
 */
const aiOut = expect.objectContaining({
  content: "Hi!",
  additional_kwargs: {},
  response_metadata: {},
  tool_calls: [],
  invalid_tool_calls: [],
  id: expect.any(String),
  type: "ai",
});

/** Streams one run of `chat` on a new thread with `streamMode`; returns the run id and the events. */
async function streamChat(streamMode: StreamMode | StreamMode[]) {
  const thread = await sdk.threads.create();
  let created: { run_id: string; thread_id?: string } | undefined;
  const parts = await collect(
    sdk.runs.stream(thread.thread_id, "chat", {
      input: { messages: [human("hello", "m1")] },
      streamMode,
      onRunCreated: (meta) => {
        created = meta;
      },
    }),
  );
  expect(created?.thread_id).toBe(thread.thread_id);
  const runId = created?.run_id ?? "";
  expect(parts[0]).toMatchObject({ event: "metadata", data: { run_id: runId, attempt: 1 } });
  return { thread, runId, parts };
}

describe("stream modes alone", () => {
  it("values: metadata first, then the state after each superstep; ids are <ms>-<seq> and rising", async () => {
    const { thread, runId, parts } = await streamChat("values");
    expect(withoutIds(parts)).toEqual([
      { event: "metadata", data: { run_id: runId, attempt: 1 } },
      { event: "values", data: { messages: [humanOut("hello", "m1")] } },
      { event: "values", data: { messages: [humanOut("hello", "m1"), aiOut] } },
    ]);
    const ids = parts.map((p) => p.id ?? "");
    for (const id of ids) expect(id).toMatch(/^\d{13}-\d+$/);
    const keys = ids.map((id) => id.split("-").map(Number) as [number, number]);
    for (let i = 1; i < keys.length; i++) {
      const [ms, seq] = keys[i] ?? [0, 0];
      const [prevMs, prevSeq] = keys[i - 1] ?? [0, 0];
      expect(ms > prevMs || (ms === prevMs && seq > prevSeq)).toBe(true);
    }
    const run = await sdk.runs.get(thread.thread_id, runId);
    expect(run).toMatchObject({ run_id: runId, thread_id: thread.thread_id, status: "success" });
    expect(run.run_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.values).toEqual({ messages: [humanOut("hello", "m1"), aiOut] });
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("idle");
  });

  it("updates: one event per node with what it returned", async () => {
    const { runId, parts } = await streamChat("updates");
    expect(withoutIds(parts)).toEqual([
      { event: "metadata", data: { run_id: runId, attempt: 1 } },
      { event: "updates", data: { agent: { messages: [aiOut] } } },
    ]);
  });

  it("messages: metadata, the reply growing token by token, then complete; no values events", async () => {
    const { parts } = await streamChat("messages");
    const names = new Set(eventNames(parts).slice(1));
    expect([...names].sort()).toEqual(["messages/complete", "messages/metadata", "messages/partial"]);
    const partial = parts.filter((p) => p.event === "messages/partial");
    expect(partial.map((p) => p.data.map((m: { content: string }) => m.content))).toEqual([
      ["H"],
      ["Hi"],
      ["Hi!"],
    ]);
    const replyId = partial[0]?.data[0].id as string;
    const meta = parts.find((p) => p.event === "messages/metadata");
    expect(Object.keys(meta?.data ?? {})).toEqual([replyId]);
    expect(meta?.data[replyId].metadata).toMatchObject({ langgraph_node: "agent", graph_id: "chat" });
    // The reply's events come in the contract's order: metadata, partials, complete.
    const ofReply = parts.filter(
      (p) =>
        (p.event === "messages/metadata" && replyId in p.data) ||
        (p.event !== "messages/metadata" && p.data?.[0]?.id === replyId),
    );
    expect(eventNames(ofReply)).toEqual([
      "messages/metadata",
      "messages/partial",
      "messages/partial",
      "messages/partial",
      "messages/complete",
    ]);
    expect(parts.at(-1)).toMatchObject({ event: "messages/complete", data: [aiOut] });
    expect(parts.at(-1)?.data[0].id).toBe(replyId);
  });

  it("messages-tuple: [chunk, metadata] per token, named `messages`", async () => {
    const { thread, runId, parts } = await streamChat("messages-tuple");
    expect(eventNames(parts)).toEqual(["metadata", "messages", "messages", "messages"]);
    const tuples = parts
      .slice(1)
      .map((p) => p.data as [{ content: string; type: string }, Record<string, unknown>]);
    expect(tuples.map(([chunk]) => chunk.content).join("")).toBe("Hi!");
    for (const [chunk, metadata] of tuples) {
      expect(chunk.type).toMatch(/^(ai|AIMessageChunk)$/);
      expect(metadata).toMatchObject({
        langgraph_node: "agent",
        thread_id: thread.thread_id,
        run_id: runId,
        graph_id: "chat",
      });
    }
  });

  it("events: the astream_events v2 lifecycle of graph, node and model", async () => {
    const { parts } = await streamChat("events");
    const lifecycle = parts.slice(1).map((p) => {
      expect(p.event).toBe("events");
      return `${p.data.event}:${p.data.name}`;
    });
    expect(lifecycle).toEqual([
      "on_chain_start:LangGraph",
      "on_chain_start:agent",
      "on_chat_model_start:FakeListChatModel",
      "on_chat_model_stream:FakeListChatModel",
      "on_chat_model_stream:FakeListChatModel",
      "on_chat_model_stream:FakeListChatModel",
      "on_chat_model_end:FakeListChatModel",
      "on_chain_end:agent",
      "on_chain_end:LangGraph",
    ]);
  });

  it("debug: checkpoints and task results with their step", async () => {
    const { parts } = await streamChat("debug");
    const debug = parts.slice(1);
    expect(new Set(eventNames(debug))).toEqual(new Set(["debug"]));
    const first = debug[0]?.data;
    expect(first).toMatchObject({ type: "checkpoint", step: -1, payload: { next: ["__start__"] } });
    expect(first.timestamp).toMatch(/^\d{4}-\d\d-\d\dT/);
    const result = debug.find((p) => p.data.type === "task_result");
    expect(result?.data).toMatchObject({ step: 1, payload: { name: "agent" } });
    expect(debug.at(-1)?.data).toMatchObject({ type: "checkpoint", step: 1, payload: { next: [] } });
  });

  it("tasks: the node's start with its input, then its result", async () => {
    const { runId, parts } = await streamChat("tasks");
    expect(withoutIds(parts)).toEqual([
      { event: "metadata", data: { run_id: runId, attempt: 1 } },
      {
        event: "tasks",
        data: expect.objectContaining({
          id: expect.any(String),
          name: "agent",
          input: { messages: [humanOut("hello", "m1")] },
          triggers: ["branch:to:agent"],
        }),
      },
      {
        event: "tasks",
        data: expect.objectContaining({ name: "agent", result: { messages: [aiOut] }, interrupts: [] }),
      },
    ]);
    expect(parts[1]?.data.id).toBe(parts[2]?.data.id);
  });

  it("checkpoints: one event per checkpoint with values and next", async () => {
    const { parts } = await streamChat("checkpoints");
    expect(eventNames(parts)).toEqual(["metadata", "checkpoints", "checkpoints", "checkpoints"]);
    expect(
      parts.slice(1).map((p) => ({ values: p.data.values, next: p.data.next, step: p.data.metadata.step })),
    ).toEqual([
      { values: { messages: [] }, next: ["__start__"], step: -1 },
      { values: { messages: [humanOut("hello", "m1")] }, next: ["agent"], step: 0 },
      { values: { messages: [humanOut("hello", "m1"), aiOut] }, next: [], step: 1 },
    ]);
  });

  it("custom: what the node wrote with config.writer", async () => {
    const { runId, parts } = await streamChat("custom");
    expect(withoutIds(parts)).toEqual([
      { event: "metadata", data: { run_id: runId, attempt: 1 } },
      { event: "custom", data: { progress: "thinking" } },
    ]);
  });
});

describe("mixed stream modes", () => {
  it("interleaves the requested modes in the order the graph produced them, and nothing else", async () => {
    const { parts } = await streamChat(["values", "updates", "custom", "messages-tuple"]);
    expect(eventNames(parts)).toEqual([
      "metadata",
      "values",
      "custom",
      "messages",
      "messages",
      "messages",
      "updates",
      "values",
    ]);
    expect(parts.at(-1)?.data).toEqual({ messages: [humanOut("hello", "m1"), aiOut] });
  });

  it("defaults to values when no stream mode is given", async () => {
    const thread = await sdk.threads.create();
    const parts = await collect(
      sdk.runs.stream(thread.thread_id, "chat", { input: { messages: [human("hey", "m2")] } }),
    );
    expect(eventNames(parts)).toEqual(["metadata", "values", "values"]);
  });
});

describe("subgraphs", () => {
  const question = humanOut("weather?", "q1");
  const report = {
    content: "Sunny in Paris",
    id: "weather-report",
    tool_calls: [],
    invalid_tool_calls: [],
    additional_kwargs: {},
    response_metadata: {},
    type: "ai",
  };

  /** Streams `nested` with values and updates; `subgraphs` asks for the subgraph's events too. */
  async function streamNested(subgraphs: boolean): Promise<StreamPart[]> {
    const thread = await sdk.threads.create();
    return collect(
      sdk.runs.stream(thread.thread_id, "nested", {
        input: { messages: [human("weather?", "q1")] },
        streamMode: ["values", "updates"],
        streamSubgraphs: subgraphs,
      }),
    );
  }

  it("stream_subgraphs names subgraph events <mode>|<node>:<task id> and shows no internal events", async () => {
    const parts = await streamNested(true);
    const namespaces = new Set(parts.filter((p) => p.event.includes("|")).map((p) => p.event.split("|")[1]));
    expect(namespaces.size).toBe(1);
    const ns = [...namespaces][0] ?? "";
    expect(ns).toMatch(/^weather:[0-9a-f-]{36}$/);
    // Each values event follows a pointer to its checkpoint, as the LangGraph JS server streams them.
    const pointer = (step: number) => ({
      id: expect.any(String),
      parent_id: expect.any(String),
      step,
      source: "loop",
    });
    expect(withoutIds(parts.slice(1))).toEqual([
      { event: "checkpoints", data: pointer(0) },
      { event: "values", data: { messages: [question] } },
      { event: "updates", data: { router: { route: "weather" } } },
      { event: "checkpoints", data: pointer(1) },
      { event: "values", data: { messages: [question], route: "weather" } },
      { event: `checkpoints|${ns}`, data: pointer(0) },
      { event: `values|${ns}`, data: { messages: [question] } },
      { event: `updates|${ns}`, data: { locate: { city: "Paris" } } },
      { event: `checkpoints|${ns}`, data: pointer(1) },
      { event: `values|${ns}`, data: { messages: [question], city: "Paris" } },
      {
        event: `updates|${ns}`,
        data: {
          report: {
            messages: [expect.objectContaining({ content: "Sunny in Paris", id: "weather-report" })],
          },
        },
      },
      { event: `checkpoints|${ns}`, data: pointer(2) },
      { event: `values|${ns}`, data: { messages: [question, report], city: "Paris" } },
      { event: "updates", data: { weather: { messages: [question, report] } } },
      { event: "checkpoints", data: pointer(2) },
      { event: "values", data: { messages: [question, report], route: "weather" } },
    ]);
  });

  it("without stream_subgraphs only the parent's events are sent", async () => {
    const parts = await streamNested(false);
    expect(eventNames(parts)).toEqual(["metadata", "values", "updates", "values", "updates", "values"]);
  });
});

describe("RemoteGraph from @langchain/langgraph/remote", () => {
  it("invokes and streams a graph of this server as if it were local", async () => {
    const remote = new RemoteGraph({ graphId: "steps", url: app.t.baseUrl, apiKey: app.t.adminKey });
    const thread = await sdk.threads.create();
    const config = { configurable: { thread_id: thread.thread_id } };
    const result = await remote.invoke({ topic: "remote" }, config);
    expect(result).toEqual({
      topic: "remote",
      text: "published: draft about remote",
      log: ["draft", "publish"],
    });

    const updates: unknown[] = [];
    for await (const chunk of await remote.stream({ topic: "again" }, { ...config, streamMode: "updates" }))
      updates.push(chunk);
    expect(updates).toEqual([
      { draft: { text: "draft about again", log: ["draft"] } },
      { publish: { text: "published: draft about again", log: ["publish"] } },
    ]);
    const state = await remote.getState(config);
    expect(state.values).toMatchObject({ topic: "again", log: ["draft", "publish", "draft", "publish"] });
  });

  it("stops on a remote interrupt and resumes with a Command", async () => {
    const remote = new RemoteGraph({ graphId: "review", url: app.t.baseUrl, apiKey: app.t.adminKey });
    const thread = await sdk.threads.create();
    const config = { configurable: { thread_id: thread.thread_id } };
    // RemoteGraph raises the server's interrupt as a GraphInterrupt, as a local graph would in a parent.
    await expect(remote.invoke({ request: "ship" }, config)).rejects.toThrow(/approve ship\?/);
    // The client stops reading at the interrupt event; the run records its end a moment later.
    await waitFor(
      () => sdk.threads.get(thread.thread_id),
      (t) => t.status === "interrupted",
    );
    expect(await remote.invoke(new Command({ resume: "ok" }), config)).toEqual({
      request: "ship",
      decision: "ok",
    });
  });
});

describe("the wire", () => {
  it("SSE blocks are event, data (one line of JSON), id, in that order; comments are the only other lines", async () => {
    const thread = await sdk.threads.create();
    const res = await app.t.fetch(`/threads/${thread.thread_id}/runs/stream`, {
      method: "POST",
      body: JSON.stringify({
        assistant_id: "steps",
        input: { topic: "wire" },
        stream_mode: ["values", "updates"],
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const blocks = (await res.text())
      .split(/\r?\n\r?\n/)
      .map((block) => block.split(/\r?\n/).filter((line) => line !== "" && !line.startsWith(":")))
      .filter((lines) => lines.length > 0);
    // event, data, id: the order both reference servers write (agent-server-api.md §1.6).
    const names = (lines: string[]) => lines.map((line) => line.slice(0, line.indexOf(":")));
    expect(blocks.map(names)).toEqual(blocks.map(() => ["event", "data", "id"]));
    const field = (lines: string[], name: string) => lines.find((line) => line.startsWith(`${name}:`)) ?? "";
    for (const lines of blocks)
      expect(() => JSON.parse(field(lines, "data").replace(/^data: ?/, ""))).not.toThrow();
    expect(blocks.map((lines) => field(lines, "event"))).toEqual([
      "event: metadata",
      "event: values",
      "event: updates",
      "event: values",
      "event: updates",
      "event: values",
      "event: end",
    ]);
    // The last event says the run ended, and how (SDK 1.15 then knows not to reconnect).
    const runId = JSON.parse(field(blocks[0] ?? [], "data").replace(/^data: ?/, "")).run_id;
    expect(JSON.parse(field(blocks.at(-1) ?? [], "data").replace(/^data: ?/, ""))).toEqual({
      run_id: runId,
      status: "success",
    });
  });

  it("Connect's server stream carries the same events as the SSE stream", async () => {
    const rpc = createClient(RunService, app.t.client().transport);
    const thread = await sdk.threads.create();
    const events: { event: string; data: unknown; id: string }[] = [];
    for await (const message of rpc.streamRun({
      threadId: thread.thread_id,
      assistantId: "steps",
      input: fromJson(ValueSchema, { topic: "rpc" }),
      streamMode: fromJson(ValueSchema, ["values", "updates"]),
    }))
      events.push({
        event: message.event,
        data: message.data ? toJson(ValueSchema, message.data) : null,
        id: message.id,
      });
    expect(events.map((e) => e.event)).toEqual([
      "metadata",
      "values",
      "updates",
      "values",
      "updates",
      "values",
      "end",
    ]);
    for (const e of events) expect(e.id).toMatch(/^\d{13}-\d+$/);
    const runId = (events[0]?.data as { run_id?: string } | undefined)?.run_id ?? "";
    expect(events.at(-1)?.data).toEqual({ run_id: runId, status: "success" });
    const replay = await collectAll(sdk.runs.joinStream(thread.thread_id, runId));
    // The run has ended and was not resumable: a join now sees only its end.
    expect(replay).toEqual([{ event: "end", data: { run_id: runId, status: "success" } }]);
    expect((await sdk.runs.get(thread.thread_id, runId)).status).toBe("success");
    expect(events.at(-2)?.data).toEqual({
      topic: "rpc",
      text: "published: draft about rpc",
      log: ["draft", "publish"],
    });
  });
});
