/**
 * Human in the loop through the official `@langchain/langgraph-sdk`: `interrupt_before` then an
 * edit with `threads.updateState` and a run that continues from it, `interrupt()` inside a node
 * resumed with `command.resume`, `Command` update/goto as run input, an interrupt inside a subgraph,
 * and a thread copied then run on.
 */
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, eventNames, human, type RunsApp, startRunsApp, withoutIds } from "../support/runs-app.js";

let app: RunsApp;
let sdk: Client;

beforeAll(async () => {
  app = await startRunsApp();
  sdk = app.sdk;
});
afterAll(async () => {
  await app?.t.stop();
});

/** Values events without the `{__interrupt__}` marker some servers add when a run stops on one. */
function plainValues(parts: Awaited<ReturnType<typeof collect>>) {
  return parts.filter((p) => p.event === "values" && !("__interrupt__" in p.data)).map((p) => p.data);
}

describe("interrupt_before", () => {
  it("stops before the node, the thread is interrupted, an edit is kept, and a run with no input continues", async () => {
    const thread = await sdk.threads.create();
    const first = await collect(
      sdk.runs.stream(thread.thread_id, "steps", { input: { topic: "cats" }, interruptBefore: ["publish"] }),
    );
    expect(first.filter((p) => p.event === "error")).toEqual([]);
    expect(plainValues(first)).toEqual([
      { topic: "cats", log: [] },
      { topic: "cats", text: "draft about cats", log: ["draft"] },
    ]);

    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.next).toEqual(["publish"]);
    expect(state.tasks).toEqual([expect.objectContaining({ name: "publish", error: null, interrupts: [] })]);
    const interrupted = await sdk.threads.get(thread.thread_id);
    expect(interrupted.status).toBe("interrupted");
    expect(interrupted.values).toEqual({ topic: "cats", text: "draft about cats", log: ["draft"] });

    await sdk.threads.updateState(thread.thread_id, { values: { text: "edited by a human" } });
    const edited = await sdk.threads.getState(thread.thread_id);
    expect(edited.values).toMatchObject({ text: "edited by a human" });
    expect(edited.next).toEqual(["publish"]);

    const second = await collect(sdk.runs.stream(thread.thread_id, "steps", { input: null }));
    expect(withoutIds(second.slice(1))).toEqual([
      { event: "values", data: { topic: "cats", text: "edited by a human", log: ["draft"] } },
      {
        event: "values",
        data: { topic: "cats", text: "published: edited by a human", log: ["draft", "publish"] },
      },
    ]);
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("idle");
  });

  it("interrupt_before on the assistant id (uuid) behaves like the graph id", async () => {
    const assistant = await sdk.assistants.create({ graphId: "steps" });
    const thread = await sdk.threads.create();
    // A run that stops on an interrupt answers wait with the interrupts, as the reference servers do.
    const values = await sdk.runs.wait(thread.thread_id, assistant.assistant_id, {
      input: { topic: "owls" },
      interruptBefore: ["publish"],
    });
    expect(values).toEqual({ __interrupt__: [] });
    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.values).toEqual({ topic: "owls", text: "draft about owls", log: ["draft"] });
    expect(state.next).toEqual(["publish"]);
  });

  it("a state update as a node moves the thread on: the next run starts after that node", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "steps", { input: { topic: "owl" }, interruptBefore: ["draft"] });
    expect((await sdk.threads.getState(thread.thread_id)).next).toEqual(["draft"]);
    await sdk.threads.updateState(thread.thread_id, { values: { text: "hand-written" }, asNode: "draft" });
    expect((await sdk.threads.getState(thread.thread_id)).next).toEqual(["publish"]);
    const values = await sdk.runs.wait(thread.thread_id, "steps", { input: null });
    expect(values).toEqual({ topic: "owl", text: "published: hand-written", log: ["publish"] });
  });

  it("interrupt_after stops once the node has run", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "steps", { input: { topic: "bees" }, interruptAfter: ["draft"] });
    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.values).toEqual({ topic: "bees", text: "draft about bees", log: ["draft"] });
    expect(state.next).toEqual(["publish"]);
  });
});

describe("interrupt() inside a node", () => {
  it("shows the interrupt on the thread and in updates, and command.resume finishes the node", async () => {
    const thread = await sdk.threads.create();
    const first = await collect(
      sdk.runs.stream(thread.thread_id, "review", {
        input: { request: "deploy" },
        streamMode: ["values", "updates"],
      }),
    );
    const interrupt = { id: expect.any(String), value: { question: "approve deploy?" } };
    expect(first.find((p) => p.event === "updates")?.data).toEqual({ __interrupt__: [interrupt] });
    expect(plainValues(first)).toEqual([{ request: "deploy" }]);

    const thread1 = await sdk.threads.get(thread.thread_id);
    expect(thread1.status).toBe("interrupted");
    expect(Object.values(thread1.interrupts ?? {})).toEqual([[interrupt]]);
    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.tasks).toEqual([expect.objectContaining({ name: "ask", interrupts: [interrupt] })]);

    const second = await collect(sdk.runs.stream(thread.thread_id, "review", { command: { resume: "yes" } }));
    expect(eventNames(second)).toEqual(["metadata", "values", "values"]);
    expect(second.at(-1)?.data).toEqual({ request: "deploy", decision: "yes" });
    const done = await sdk.threads.get(thread.thread_id);
    expect(done.status).toBe("idle");
    expect(done.interrupts).toEqual({});
  });

  it("wait answers the pending interrupt, and a second wait with command.resume the final values", async () => {
    const thread = await sdk.threads.create();
    const values = await sdk.runs.wait(thread.thread_id, "review", { input: { request: "merge" } });
    expect(values).toEqual({
      __interrupt__: [{ id: expect.any(String), value: { question: "approve merge?" } }],
    });
    const resumed = await sdk.runs.wait(thread.thread_id, "review", { command: { resume: "no" } });
    expect(resumed).toEqual({ request: "merge", decision: "no" });
  });
});

describe("Command as run input", () => {
  it("command.update writes state and command.goto sends the run to a node", async () => {
    const thread = await sdk.threads.create();
    const values = await sdk.runs.wait(thread.thread_id, "steps", {
      command: { update: { topic: "dogs", text: "given" }, goto: "publish" },
    });
    expect(values).toEqual({ topic: "dogs", text: "published: given", log: ["publish"] });
  });

  it("command.update alone on an interrupted thread changes the state the next node sees", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "steps", {
      input: { topic: "fish" },
      interruptBefore: ["publish"],
    });
    const values = await sdk.runs.wait(thread.thread_id, "steps", {
      command: { update: { text: "rewritten" } },
    });
    expect(values).toMatchObject({ text: "published: rewritten", log: ["draft", "publish"] });
  });
});

describe("subgraph interrupts", () => {
  it("a subgraph compiled to stop before a node stops inside it, and a run with no input finishes it", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "nested_review", {
      input: { messages: [human("weather?", "q1")] },
    });
    const state = await sdk.threads.getState(thread.thread_id, undefined, { subgraphs: true });
    expect(state.next).toEqual(["weather"]);
    const task = state.tasks[0];
    expect(task?.name).toBe("weather");
    expect(task?.state).toMatchObject({ values: { city: "Paris" }, next: ["report"] });

    const parts = await collect(
      sdk.runs.stream(thread.thread_id, "nested_review", {
        input: null,
        streamMode: "updates",
        streamSubgraphs: true,
      }),
    );
    const sub = parts.filter((p) => p.event.startsWith("updates|weather:"));
    expect(sub.map((p) => Object.keys(p.data))).toEqual([["report"]]);
    const final = await sdk.threads.getState(thread.thread_id);
    expect(final.next).toEqual([]);
    expect((final.values as { messages: { content: string }[] }).messages.map((m) => m.content)).toEqual([
      "weather?",
      "Sunny in Paris",
    ]);
  });
});

describe("copy then run", () => {
  it("a copied thread keeps the original's state and runs on from it without touching the original", async () => {
    const original = await sdk.threads.create();
    await sdk.runs.wait(original.thread_id, "steps", {
      input: { topic: "tea" },
      interruptBefore: ["publish"],
    });
    const copy = await sdk.threads.copy(original.thread_id);
    expect(copy.thread_id).not.toBe(original.thread_id);
    expect((await sdk.threads.getState(copy.thread_id)).next).toEqual(["publish"]);

    const values = await sdk.runs.wait(copy.thread_id, "steps", { input: null });
    expect(values).toEqual({ topic: "tea", text: "published: draft about tea", log: ["draft", "publish"] });
    const originalState = await sdk.threads.getState(original.thread_id);
    expect(originalState.values).toEqual({ topic: "tea", text: "draft about tea", log: ["draft"] });
    expect(originalState.next).toEqual(["publish"]);
    expect(await sdk.runs.list(copy.thread_id)).toHaveLength(1);
  });
});
