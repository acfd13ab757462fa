/**
 * A graph project with its own LangChain packages in its own node_modules, older than agentplane's
 * (`test/fixtures/graph-project-langgraph-1.2`: `@langchain/langgraph` 1.2 on `@langchain/core` 1.2,
 * installed there by the root's `npm install` as a workspace whose versions differ from the root's),
 * runs through the official SDK as it runs on the LangGraph servers: streamed tokens and values, an
 * `interrupt()` resumed with a command, the thread's state and history; and through the streaming
 * protocol, which that LangGraph predates (it has no protocol event stream: agentplane converts its
 * chunks). The graph reports the LangGraph release it was built with, so the test knows the
 * project's copy ran, not agentplane's.
 */
import { readFile } from "node:fs/promises";
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, type RunsApp, startRunsApp, waitFor } from "../support/runs-app.js";

const PROJECT = "test/fixtures/graph-project-langgraph-1.2";

let app: RunsApp;
let sdk: Client;
let projectLangGraph: string;
let serverLangGraph: string;

beforeAll(async () => {
  const version = async (path: string) =>
    (JSON.parse(await readFile(`${path}/package.json`, "utf8")) as { version: string }).version;
  projectLangGraph = await version(`${PROJECT}/node_modules/@langchain/langgraph`);
  serverLangGraph = await version("node_modules/@langchain/langgraph");
  app = await startRunsApp({ graphConfigPath: `${PROJECT}/langgraph.json` });
  sdk = app.sdk;
});
afterAll(async () => {
  await app?.t.stop();
});

describe("a graph project on an older LangGraph than agentplane's", () => {
  it("has its own copy: another release than the server's", () => {
    expect(projectLangGraph).toBe("1.2.9");
    expect(serverLangGraph).not.toBe(projectLangGraph);
  });

  it("streams tokens and values, stops on its interrupt, and resumes with a command", async () => {
    const thread = await sdk.threads.create();
    const parts = await collect(
      sdk.runs.stream(thread.thread_id, "old_chat", {
        input: { messages: [{ role: "user", content: "hi" }] },
        streamMode: ["values", "messages-tuple", "updates"],
      }),
    );
    expect(parts.filter((p) => p.event === "error")).toEqual([]);
    const tokens = parts
      .filter((p) => p.event === "messages")
      .map((p) => (p.data as [{ content: string }, unknown])[0].content);
    expect(tokens.join("")).toBe("Old hello");
    const values = parts
      .filter((p) => p.event === "values" && !("__interrupt__" in p.data))
      .map((p) => p.data as Record<string, unknown>);
    expect(values.at(-1)).toMatchObject({ langgraph: projectLangGraph });
    const interruptUpdate = parts.find(
      (p) => p.event === "updates" && "__interrupt__" in (p.data as Record<string, unknown>),
    );
    expect(interruptUpdate?.data).toMatchObject({ __interrupt__: [{ value: { question: "ship it?" } }] });

    const interrupted = await sdk.threads.getState(thread.thread_id);
    expect(interrupted.next).toEqual(["review"]);
    expect(interrupted.tasks).toEqual([
      expect.objectContaining({
        name: "review",
        interrupts: [expect.objectContaining({ value: { question: "ship it?" } })],
      }),
    ]);
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("interrupted");

    const resumed = await sdk.runs.wait(thread.thread_id, "old_chat", { command: { resume: "yes" } });
    expect(resumed).toMatchObject({ verdict: "yes", langgraph: projectLangGraph });
    const final = await sdk.threads.getState(thread.thread_id);
    expect(final.next).toEqual([]);
    expect((final.values as { messages: { content: string }[] }).messages.map((m) => m.content)).toEqual([
      "hi",
      "Old hello",
    ]);
    const history = await sdk.threads.getHistory(thread.thread_id);
    expect(history.length).toBeGreaterThanOrEqual(4);
    expect(history.map((h) => h.metadata?.source)).toContain("input");
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("idle");
  });

  it("runs as a protocol run: values, lifecycle and the interrupt over ThreadStream, answered with input.respond", async () => {
    const thread = await sdk.threads.create();
    const stream = sdk.threads.stream(thread.thread_id, { assistantId: "old_chat" });
    const events: { method: string; params: { namespace: string[]; data: Record<string, unknown> } }[] = [];
    const subscription = await stream.subscribe(["lifecycle", "input", "values", "messages"]);
    const firstRun = (async () => {
      for await (const raw of subscription) {
        const event = raw as (typeof events)[number];
        events.push(event);
        if (
          event.method === "lifecycle" &&
          event.params.namespace.length === 0 &&
          event.params.data.event === "interrupted"
        )
          return;
      }
    })();
    await stream.run.start({ input: { messages: [{ role: "user", content: "hi" }] } });
    await firstRun;
    const requested = events.find((e) => e.method === "input.requested");
    expect(requested?.params.data.payload).toEqual({ question: "ship it?" });
    const values = events.filter((e) => e.method === "values").at(-1);
    expect(values?.params.data).toMatchObject({ langgraph: projectLangGraph });
    // That LangGraph streams message chunks; they arrive as the protocol's content blocks.
    const deltas = events
      .filter((e) => e.method === "messages" && e.params.data.event === "content-block-delta")
      .map((e) => (e.params.data.delta as { text: string }).text);
    expect(deltas.join("")).toBe("Old hello");
    expect(events.filter((e) => e.method === "messages").map((e) => e.params.data.event)).toEqual([
      "message-start",
      "content-block-start",
      ...deltas.map(() => "content-block-delta"),
      "content-block-finish",
      "message-finish",
    ]);
    await stream.input.respond({
      namespace: [],
      interrupt_id: String(requested?.params.data.interrupt_id),
      response: "yes",
    });
    await waitFor(
      () => sdk.threads.get(thread.thread_id),
      (t) => t.status === "idle",
    );
    expect((await stream.state.get({ namespace: [] })) as { values: unknown }).toMatchObject({
      values: { verdict: "yes", langgraph: projectLangGraph },
    });
    await stream.close();
  });
});
