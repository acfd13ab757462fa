/**
 * A graph project with its own LangChain packages in its own node_modules, older than agentplane's
 * (`test/fixtures/graph-project-langgraph-1.4`: `@langchain/langgraph` 1.4 on `@langchain/core` 1.2,
 * installed there by the root's `npm install` as a workspace whose versions differ from the root's),
 * runs through the official SDK as it runs on the LangGraph servers: streamed tokens and values, an
 * `interrupt()` resumed with a command, the thread's state and history. The graph reports the
 * LangGraph release it was built with, so the test knows the project's copy ran, not agentplane's.
 */
import { readFile } from "node:fs/promises";
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, type RunsApp, startRunsApp } from "../support/runs-app.js";

const PROJECT = "test/fixtures/graph-project-langgraph-1.4";

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
    expect(projectLangGraph).toBe("1.4.12");
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
});
