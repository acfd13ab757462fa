/**
 * LangGraph's behaviour at the edges of runs, through the official `@langchain/langgraph-sdk`,
 * compared with what the LangGraph JS server (`langgraphjs dev` 1.5.1) answered for the same
 * scenarios on the same graphs (test/e2e/fixtures/edge-graphs, captured into its
 * `js-server-answers.json` by `bench/capture-js-edges.ts`; CI never runs the JS server):
 *
 * - an `interrupt()` inside a subgraph: the stream, the thread, its state with and without
 *   subgraphs, an edit on the subgraph's namespace and the resume (item 1);
 * - a thread edited while interrupted stays interrupted (item 2);
 * - `debug` streams: every step's checkpoint and tasks, the input checkpoint of step -1, a run
 *   continued after an interrupt and one continued from a checkpoint (item 4);
 * - `messages` mixed with other modes (item 5);
 * - a stateless run's checkpoint streams (item 6);
 * - a graph exported as a factory of its config, updated as a node of the configured graph (item 7).
 *
 * "The same" is said per scenario: ids and times are replaced by placeholders in order of
 * appearance (so how ids relate must match), and what each server adds of its own is named and
 * left out.
 */
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  debugStreams,
  dynamicGraph,
  type EdgeAnswers,
  type EdgeTarget,
  type Event,
  edgeTarget,
  editWhileInterrupted,
  MESSAGE_MIXES,
  messageMixes,
  normalizeIds,
  statelessCheckpoints,
  subgraphInterrupt,
  without,
} from "../support/edge-scenarios.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const FIXTURE = "test/e2e/fixtures/edge-graphs";

/**
 * Run metadata each server adds of its own: the JS server's version, plan, host and URL, the
 * SDK's user agent it copies from the request, and the system assistant's `created_by` it merges
 * into runs.
 */
const SERVER_METADATA = [
  "langgraph_version",
  "langgraph_plan",
  "langgraph_host",
  "langgraph_api_url",
  "user-agent",
  "created_by",
] as const;

let t: TestApp;
let target: EdgeTarget;
let js: EdgeAnswers["main"];

beforeAll(async () => {
  js = (JSON.parse(await readFile(`${FIXTURE}/js-server-answers.json`, "utf8")) as EdgeAnswers).main;
  t = await startTestApp({ graphConfigPath: `${FIXTURE}/langgraph.json` });
  target = edgeTarget(t.baseUrl, { "x-api-key": t.adminKey });
});
afterAll(async () => {
  await t?.stop();
});

/** What a checkpoint's metadata says of the graph (the rest is run metadata, which servers differ in). */
function graphMetadata(metadata: unknown) {
  const m = (metadata ?? {}) as Record<string, unknown>;
  return { source: m.source, step: m.step, parents: m.parents };
}

/**
 * A thread state as compared: values, next, tasks (a subgraph's state compared the same way),
 * checkpoints and what the metadata says of the graph. Left out: the time, the run metadata, and
 * the state's own `interrupts` list (agentplane answers it, as the OpenAPI spec and the Python
 * server do; the JS server has only the tasks' interrupts, which are compared).
 */
// biome-ignore lint/suspicious/noExplicitAny: thread states as the SDK returns them
function stateView(state: any): unknown {
  if (!state) return state;
  return {
    values: state.values,
    next: state.next,
    // biome-ignore lint/suspicious/noExplicitAny: tasks as the SDK returns them
    tasks: state.tasks.map((task: any) => ({ ...task, state: stateView(task.state) })),
    checkpoint: state.checkpoint,
    parent_checkpoint: state.parent_checkpoint,
    metadata: graphMetadata(state.metadata),
  };
}

/** A debug or checkpoints event as compared: its payload's metadata as {@link graphMetadata}, configs without server metadata. */
function eventView(event: Event): unknown {
  const base = event.event.split("|")[0];
  if (base === "debug" && event.data?.type === "checkpoint") {
    const payload = event.data.payload;
    return {
      ...event,
      data: {
        ...event.data,
        payload: {
          ...(without(payload, SERVER_METADATA) as object),
          metadata: graphMetadata(payload.metadata),
        },
      },
    };
  }
  if (base === "checkpoints" && event.data?.config)
    return {
      ...event,
      data: {
        ...(without(event.data, SERVER_METADATA) as object),
        metadata: graphMetadata(event.data.metadata),
      },
    };
  return without(event, SERVER_METADATA);
}

const sameEvents = (ours: Event[], theirs: Event[]) =>
  expect(normalizeIds(ours.map(eventView))).toEqual(normalizeIds(theirs.map(eventView)));

describe("an interrupt() inside a subgraph (item 1)", () => {
  let ours: Awaited<ReturnType<typeof subgraphInterrupt>>;
  beforeAll(async () => {
    ours = await subgraphInterrupt(target);
  });

  it("streams the subgraph's events, with checkpoint pointers, as the JS server does", () => {
    const names = ours.first.map((e) => e.event.replace(/\|booking:.*/, "|booking"));
    expect(names).toEqual([
      "metadata",
      "checkpoints",
      "values",
      "updates",
      "checkpoints",
      "values",
      "checkpoints|booking",
      "values|booking",
      "updates|booking",
      "checkpoints|booking",
      "values|booking",
      "updates|booking",
      "values|booking",
      "updates",
      "values",
    ]);
    expect(ours.first.at(-1)?.data).toEqual({
      __interrupt__: [{ id: expect.any(String), value: { question: "book Grand Hotel?" } }],
    });
    sameEvents(ours.first, js.subgraphInterrupt.first);
  });

  it("shows the subgraph's task with its own state and interrupt, read with and without subgraphs", () => {
    const [task] = ours.withSubgraphs.tasks;
    expect(task).toMatchObject({
      name: "booking",
      path: ["__pregel_pull", "booking"],
      checkpoint: null,
      result: null,
      interrupts: [{ value: { question: "book Grand Hotel?" } }],
      state: { values: { hotel: "Grand Hotel" }, next: ["confirm"] },
    });
    expect(normalizeIds(stateView(ours.withSubgraphs))).toEqual(
      normalizeIds(stateView(js.subgraphInterrupt.withSubgraphs)),
    );
    expect(ours.state.tasks[0]?.checkpoint).toEqual({
      thread_id: expect.any(String),
      checkpoint_ns: expect.stringMatching(/^booking:/),
    });
    expect(normalizeIds(stateView(ours.state))).toEqual(normalizeIds(stateView(js.subgraphInterrupt.state)));
  });

  it("marks the thread interrupted with the subgraph's interrupt", () => {
    expect(ours.interrupted.status).toBe("interrupted");
    // Keyed by the parent's task (`booking`), whose state the thread is; the JS server keys it by
    // the subgraph's own task, read from the subgraph's checkpoint. The interrupts are the same.
    const [bookingTask] = ours.state.tasks;
    expect(Object.keys(ours.interrupted.interrupts ?? {})).toEqual([bookingTask?.id]);
    expect(normalizeIds(Object.values(ours.interrupted.interrupts ?? {}))).toEqual(
      normalizeIds(Object.values(js.subgraphInterrupt.interrupted.interrupts ?? {})),
    );
  });

  it("takes an edit on the subgraph's namespace, stays interrupted, and resumes the subgraph with it", () => {
    expect(normalizeIds(ours.edit)).toEqual(normalizeIds(js.subgraphInterrupt.edit));
    expect(ours.edited.values).toMatchObject({ hotel: "Harbour Inn" });
    expect(normalizeIds(stateView(ours.edited))).toEqual(
      normalizeIds(stateView(js.subgraphInterrupt.edited)),
    );
    expect(ours.afterEditStatus).toBe("interrupted");
    sameEvents(ours.resumed, js.subgraphInterrupt.resumed);
    expect(ours.done).toEqual({
      status: "idle",
      values: {
        city: "Lisbon",
        messages: [
          expect.objectContaining({ content: "a trip", type: "human" }),
          expect.objectContaining({ content: "Harbour Inn: yes", type: "ai" }),
        ],
      },
      interrupts: {},
    });
    expect(ours.done.status).toBe(js.subgraphInterrupt.done.status);
  });

  it("resumes without an edit", () => {
    expect(ours.resumedPlain).toMatchObject({ messages: [{}, { content: "Grand Hotel: no" }] });
    expect(normalizeIds(ours.resumedPlain)).toEqual(normalizeIds(js.subgraphInterrupt.resumedPlain));
  });
});

describe("an edit of an interrupted thread (item 2)", () => {
  it("leaves the thread interrupted until a run finishes it", async () => {
    const ours = await editWhileInterrupted(target);
    expect(ours).toEqual({
      before: "interrupted",
      after: "interrupted",
      next: ["publish"],
      finished: { topic: "owls", text: "published: edited by a human", log: ["draft", "publish"] },
      end: "idle",
    });
    expect(ours).toEqual(js.editWhileInterrupted);
  });
});

describe("debug streams (item 4)", () => {
  let ours: Awaited<ReturnType<typeof debugStreams>>;
  beforeAll(async () => {
    ours = await debugStreams(target);
  });

  /** `type:step` of each debug event. */
  const steps = (list: Event[]) => list.slice(1).map((e) => `${e.data.type}:${e.data.step}`);

  it("carry the checkpoint and tasks of every step from the input checkpoint of step -1", () => {
    expect(steps(ours.stopped)).toEqual([
      "checkpoint:-1",
      "checkpoint:0",
      "task:1",
      "task_result:1",
      "checkpoint:1",
    ]);
    const [input] = ours.stopped.slice(1);
    expect(input?.data.payload).toMatchObject({
      checkpoint: { checkpoint_ns: "", checkpoint_map: null },
      parent_checkpoint: null,
      metadata: { source: "input", step: -1 },
      next: ["__start__"],
    });
    sameEvents(ours.stopped, js.debugStreams.stopped);
  });

  it("carry the same on the run continued after the interrupt, its first checkpoint included", () => {
    expect(steps(ours.continued)).toEqual(["checkpoint:1", "task:2", "task_result:2", "checkpoint:2"]);
    sameEvents(ours.continued, js.debugStreams.continued);
    // Every checkpoint streamed is one of the thread's history, with the same parent.
    const streamed = [...ours.stopped, ...ours.continued.slice(2)]
      .filter((e) => e.data?.type === "checkpoint")
      .map((e) => ({ checkpoint: e.data.payload.checkpoint, parent: e.data.payload.parent_checkpoint }));
    const history = [...ours.history]
      .reverse()
      .map((s) => ({ checkpoint: s.checkpoint, parent: s.parent_checkpoint ?? null }));
    expect(streamed).toEqual(history);
    expect(normalizeIds(ours.history.map(stateView))).toEqual(
      normalizeIds(js.debugStreams.history.map(stateView)),
    );
  });

  it("carry a run continued from a checkpoint of the history", () => {
    // The JS server copies the request's whole checkpoint into the run's configurable, so its
    // configs echo `checkpoint_map: null`; agentplane's run takes the checkpoint's id and namespace.
    const echoOf = (list: Event[]) => list.map((e) => without(e, ["checkpoint_map"]) as Event);
    sameEvents(echoOf(ours.fromCheckpoint), echoOf(js.debugStreams.fromCheckpoint));
    expect(ours.fromCheckpoint.slice(1).map((e) => `${e.data.type}:${e.data.step}`)).toEqual([
      "checkpoint:0",
      "task:1",
      "task_result:1",
      "checkpoint:1",
      "task:2",
      "task_result:2",
      "checkpoint:2",
    ]);
    expect(normalizeIds(ours.forkedHistory.map(stateView))).toEqual(
      normalizeIds(js.debugStreams.forkedHistory.map(stateView)),
    );
  });
});

describe("messages mixed with other stream modes (item 5)", () => {
  it("stream messages/metadata, messages/partial and messages/complete where LangGraph does", async () => {
    const ours = await messageMixes(target);
    expect(ours["messages,values"]?.map((e) => e.event)).toEqual([
      "metadata",
      "values",
      "messages/complete",
      "messages/metadata",
      "messages/partial",
      "messages/partial",
      "messages/partial",
      "values",
      "messages/complete",
    ]);
    for (const mix of MESSAGE_MIXES) {
      const key = mix.join(",") as keyof typeof ours;
      expect
        .soft(normalizeIds(ours[key]?.map(eventView)), key)
        .toEqual(normalizeIds(js.messageMixes[key]?.map(eventView)));
    }
  });
});

describe("a stateless run's checkpoint streams (item 6)", () => {
  it("carry checkpoints and debug checkpoints as a thread run's do", async () => {
    const ours = await statelessCheckpoints(target);
    const isCheckpoint = (e: Event) =>
      e.event === "checkpoints" || (e.event === "debug" && e.data.type === "checkpoint");
    // The JS server runs stateless runs without a checkpointer: it streams their tasks alone.
    expect(js.statelessCheckpoints.filter(isCheckpoint)).toEqual([]);
    sameEvents(
      ours.filter((e) => !isCheckpoint(e)),
      js.statelessCheckpoints,
    );
    const checkpoints = ours.filter(isCheckpoint);
    expect(
      checkpoints.map((e) => `${e.event}:${e.data.payload?.metadata.step ?? e.data.metadata.step}`),
    ).toEqual([
      "checkpoints:-1",
      "debug:-1",
      "checkpoints:0",
      "debug:0",
      "checkpoints:1",
      "debug:1",
      "checkpoints:2",
      "debug:2",
    ]);
    const last = checkpoints.at(-1)?.data.payload;
    expect(last).toMatchObject({
      values: { topic: "bees", text: "published: draft about bees", log: ["draft", "publish"] },
      next: [],
      checkpoint: { checkpoint_id: expect.any(String), checkpoint_ns: "" },
      parent_checkpoint: { checkpoint_id: expect.any(String) },
    });
    // The temporary thread went with the run, its checkpoints with it.
    expect((await target.client().threads.search({ limit: 1000 })).map((th) => th.thread_id)).not.toContain(
      last.checkpoint.thread_id,
    );
  });
});

describe("a graph exported as a factory of its config (item 7)", () => {
  it("takes a state update as a node of the graph its thread's runs were built with", async () => {
    const ours = await dynamicGraph(target);
    expect(ours).toMatchObject({ update: "ok", values: { messages: ["input", "assistant", "update"] } });
    expect(normalizeIds(ours)).toEqual(normalizeIds(js.dynamicGraph));
  });
});
