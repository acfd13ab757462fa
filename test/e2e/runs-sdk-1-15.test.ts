/**
 * What `@langchain/langgraph-sdk` 1.15 adds to the run endpoints, through its own calls: a stream's
 * closing `feedback` and `end` events, the `lifecycle` and `tools` stream modes, stream namespaces,
 * a join with `checkpoint_id` and `cancel_on_disconnect` (what `useStream` sends when a page reloads
 * mid-run), `strictResume`, `cancel_reason` (with the `taken` reason), `select` on state and
 * history, several thread-stream modes at once, the `/info` flags, and URL-encoded path segments.
 */
import type { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, collectAll, sdkClient, waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = "test/e2e/fixtures/protocol-graphs/langgraph.json";

let t: TestApp;
let sdk: Client;

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: GRAPHS });
  sdk = sdkClient(t.baseUrl, t.adminKey);
});
afterAll(() => t?.stop());

describe("a run stream's last events", () => {
  it("ends with feedback (for feedback_keys) and then end {run_id, status}", async () => {
    const thread = await sdk.threads.create();
    const parts = await collectAll(
      sdk.runs.stream(thread.thread_id, "chat", {
        input: { messages: [{ role: "user", content: "hi" }] },
        feedbackKeys: ["helpful"],
      }),
    );
    const runId = parts[0]?.data.run_id as string;
    expect(parts.slice(-2).map((p) => p.event)).toEqual(["feedback", "end"]);
    expect(parts.at(-1)?.data).toEqual({ run_id: runId, status: "success" });
    const url = new URL(parts.at(-2)?.data.helpful as string);
    expect(url.pathname).toMatch(/^\/api\/v1\/feedback\/tokens\/[0-9a-f-]{36}$/);
    // The presigned URL takes feedback on the run, without an API key.
    const given = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ score: 1 }),
    });
    expect(given.status).toBeLessThan(300);
  });

  it("ends a failed run's stream with end status error, and a cancelled one's with interrupted", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "slow_chat", {
      input: { messages: [{ role: "user", content: "hi" }] },
      config: { configurable: { delay_ms: 200 } },
    });
    await sdk.runs.cancel(thread.thread_id, run.run_id, true);
    const joined = await collectAll(sdk.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
    expect(joined.at(-1)).toMatchObject({
      event: "end",
      data: { run_id: run.run_id, status: "interrupted" },
    });
  });
});

describe("stream modes", () => {
  it("lifecycle: each subgraph's start and end, named for its namespace", async () => {
    const thread = await sdk.threads.create();
    const parts = await collect(
      sdk.runs.stream(thread.thread_id, "nested", { input: { messages: [] }, streamMode: ["lifecycle"] }),
    );
    const lifecycle = parts.filter((p) => p.event.startsWith("lifecycle|"));
    expect(lifecycle.map((p) => p.data.event)).toEqual(["started", "completed"]);
    const [started, completed] = lifecycle;
    expect(started?.event).toMatch(/^lifecycle\|weather:[0-9a-f-]+$/);
    expect(completed?.event).toBe(started?.event);
    expect(started?.data.namespace).toEqual([started?.event.slice("lifecycle|".length)]);
    // Only lifecycle was asked for: no subgraph events of other modes.
    expect(parts.map((p) => p.event.split("|")[0])).toEqual(["metadata", "lifecycle", "lifecycle"]);
  });

  it("lifecycle: a subgraph that stops for review is interrupted", async () => {
    const thread = await sdk.threads.create();
    const parts = await collect(
      sdk.runs.stream(thread.thread_id, "nested_review", {
        input: { messages: [] },
        streamMode: ["lifecycle"],
      }),
    );
    expect(parts.filter((p) => p.event.startsWith("lifecycle|")).map((p) => p.data.event)).toEqual([
      "started",
      "interrupted",
    ]);
  });

  it("tools: the tool's start and end as the library reports them", async () => {
    const thread = await sdk.threads.create();
    const parts = await collect(
      sdk.runs.stream(thread.thread_id, "tools", {
        input: { messages: [{ role: "user", content: "weather?" }] },
        streamMode: ["tools"],
      }),
    );
    const tools = parts
      .filter((p) => p.event === "tools")
      .map((p) => p.data as { event: string; name?: string });
    expect(tools.map((d) => d.event)).toEqual(["on_tool_start", "on_tool_end"]);
    expect(tools[0]?.name).toBe("weather");
  });
});

describe("namespaces and joins", () => {
  it("a join with streamNamespaces sends only those namespaces' events", async () => {
    const thread = await sdk.threads.create();
    const all = await collect(
      sdk.runs.stream(thread.thread_id, "nested", {
        input: { messages: [] },
        streamMode: ["values"],
        streamSubgraphs: true,
        streamResumable: true,
      }),
    );
    const runId = all[0]?.data.run_id as string;
    const sub = all.find((p) => p.event.startsWith("values|"))?.event.slice("values|".length) as string;
    const onlySub = await collect(
      sdk.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1", streamNamespaces: [sub] }),
    );
    expect(onlySub.filter((p) => p.event === `values|${sub}`).length).toBeGreaterThan(1);
    expect(onlySub[0]?.event).toBe("metadata");
    // Every event of the subgraph's namespace (its values, and the checkpoint pointers beside them).
    expect(onlySub.slice(1).every((p) => p.event.endsWith(`|${sub}`))).toBe(true);
    expect(onlySub.length - 1).toBe(all.filter((p) => p.event.endsWith(`|${sub}`)).length);
    const onlyRoot = await collect(
      sdk.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1", streamNamespaces: [""] }),
    );
    expect(onlyRoot.map((p) => p.event)).toEqual(
      all.filter((p) => !p.event.includes("|")).map((p) => p.event),
    );
    // On a streamed run too: the namespaces go in the query, the run in the body.
    const thread2 = await sdk.threads.create();
    const rootOnly = await collect(
      sdk.runs.stream(thread2.thread_id, "nested", {
        input: { messages: [] },
        streamMode: ["values"],
        streamSubgraphs: true,
        streamNamespaces: [""],
      }),
    );
    expect(rootOnly.every((p) => !p.event.includes("|"))).toBe(true);
  });

  it("joins a running run as useStream rejoins after a reload: checkpoint_id and cancel_on_disconnect=0", async () => {
    const thread = await sdk.threads.create();
    const run = await sdk.runs.create(thread.thread_id, "slow_chat", {
      input: { messages: [{ role: "user", content: "hi" }] },
      streamMode: ["values", "checkpoints"],
      config: { configurable: { delay_ms: 20 } },
    });
    const head = await waitFor(
      () => sdk.threads.getState(thread.thread_id),
      (s) => s.checkpoint?.checkpoint_id != null,
    );
    const parts = await collect(
      sdk.runs.joinStream(thread.thread_id, run.run_id, {
        lastEventId: "-1",
        checkpointId: head.checkpoint.checkpoint_id ?? undefined,
        cancelOnDisconnect: false,
      }),
    );
    const values = parts.filter((p) => p.event === "values");
    expect(values.at(-1)?.data.messages).toHaveLength(2);
    // The replay starts after the checkpoint the client already shows.
    const shown = parts.filter(
      (p) =>
        p.event === "checkpoints" &&
        p.data.config?.configurable?.checkpoint_id === head.checkpoint.checkpoint_id,
    );
    expect(shown).toEqual([]);
    expect((await sdk.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
  });
});

describe("strictResume", () => {
  it("refuses a resume of an interrupt that is not waiting; the thread stays interrupted; the right id resumes", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "approval", {
      input: { messages: [{ role: "user", content: "plan" }] },
    });
    const state = await sdk.threads.getState(thread.thread_id);
    const waiting = state.tasks.flatMap((task) => task.interrupts.map((i) => i.id as string));
    expect(waiting).toHaveLength(1);
    // The answer's JSON Schema, as the graph gave it to interrupt().
    expect(state.tasks[0]?.interrupts[0]?.response_schema).toMatchObject({
      type: "string",
      enum: ["yes", "no"],
    });
    expect((await sdk.threads.get(thread.thread_id)).interrupts).toMatchObject({
      [state.tasks[0]?.id as string]: [{ response_schema: { enum: ["yes", "no"] } }],
    });

    const parts = await collect(
      sdk.runs.stream(thread.thread_id, "approval", {
        command: { resume: { "no-such-interrupt": "yes" } },
        strictResume: true,
      }),
    );
    const error = parts.find((p) => p.event === "error")?.data;
    expect(error).toMatchObject({
      error: "UnknownInterruptError",
      reason: "unknown_interrupt",
      interrupt_ids: ["no-such-interrupt"],
      pending_ids: waiting,
    });
    const after = await sdk.threads.get(thread.thread_id);
    expect(after.status).toBe("interrupted");
    expect((await sdk.threads.getState(thread.thread_id)).values).toEqual(state.values);

    const resumed = (await sdk.runs.wait(thread.thread_id, "approval", {
      command: { resume: { [waiting[0] as string]: "yes" } },
      strictResume: true,
    })) as { decision: string };
    expect(resumed.decision).toBe("yes");
  });

  it("over the streaming protocol: the resuming run fails with the refusal, and the interrupt waits on", async () => {
    const thread = await sdk.threads.create();
    const stream = sdk.threads.stream(thread.thread_id, { assistantId: "approval" });
    const events: {
      method: string;
      event_id: string;
      params: { namespace: string[]; data: Record<string, unknown> };
    }[] = [];
    const subscription = await stream.subscribe(["lifecycle", "input"]);
    const collector = (async () => {
      for await (const raw of subscription as AsyncIterable<unknown>) {
        const event = raw as (typeof events)[number];
        events.push(event);
        if (
          event.method === "lifecycle" &&
          event.params.namespace.length === 0 &&
          event.params.data.event === "failed"
        )
          return;
      }
    })();
    await stream.run.start({ input: { messages: [{ role: "user", content: "plan" }] } });
    await waitFor(
      () => sdk.threads.get(thread.thread_id),
      (th) => th.status === "interrupted",
    );
    // The first run's end pauses that subscription; the refused resume's events come on a new one.
    events.length = 0;
    const refused = (async () => {
      for await (const raw of (await stream.subscribe(["lifecycle"])) as AsyncIterable<unknown>) {
        const event = raw as (typeof events)[number];
        events.push(event);
        if (
          event.method === "lifecycle" &&
          event.params.namespace.length === 0 &&
          event.params.data.event === "failed"
        )
          return;
      }
    })();
    await stream.respondInput(
      { namespace: [], interrupt_id: "not-it", response: "yes" },
      { strictResume: true },
    );
    await refused;
    void collector;
    const failed = events.at(-1)?.params.data;
    expect(failed).toMatchObject({ event: "failed", reason: "unknown_interrupt", interrupt_ids: ["not-it"] });
    expect((failed?.pending_ids as string[] | undefined)?.length).toBe(1);
    expect((await sdk.threads.get(thread.thread_id)).status).toBe("interrupted");
    await stream.close();
  });
});

describe("runs, state and thread streams", () => {
  it("records why a run was cancelled: taken, and a newer run's interrupt strategy", async () => {
    const thread = await sdk.threads.create();
    const slow = {
      input: { messages: [{ role: "user", content: "hi" }] },
      config: { configurable: { delay_ms: 200 } },
    };
    const first = await sdk.runs.create(thread.thread_id, "slow_chat", slow);
    await sdk.runs.cancel(thread.thread_id, first.run_id, true, "interrupt", { reason: "taken" });
    expect((await sdk.runs.get(thread.thread_id, first.run_id)).cancel_reason).toMatch(
      /^taken:\d{4}-\d\d-\d\dT/,
    );

    const second = await sdk.runs.create(thread.thread_id, "slow_chat", slow);
    const third = await sdk.runs.create(thread.thread_id, "chat", {
      input: null,
      multitaskStrategy: "interrupt",
    });
    await sdk.runs.join(thread.thread_id, third.run_id);
    expect((await sdk.runs.get(thread.thread_id, second.run_id)).cancel_reason).toBe("multitask:interrupt");
    expect((await sdk.runs.get(thread.thread_id, third.run_id)).cancel_reason ?? null).toBeNull();
    const listed = await sdk.runs.list(thread.thread_id, { select: ["run_id", "cancel_reason"] });
    expect(Object.keys(listed[0] ?? {}).sort()).toEqual(["run_id"]);

    const refused = await t.fetch(
      `/threads/${thread.thread_id}/runs/${third.run_id}/cancel?reason=whatever`,
      { method: "POST" },
    );
    expect(refused.status).toBe(422);
  });

  it("select on state and history answers only the fields asked for; values.<key> one key", async () => {
    const thread = await sdk.threads.create();
    await sdk.runs.wait(thread.thread_id, "approval", {
      input: { messages: [{ role: "user", content: "plan" }] },
    });
    const messagesOnly = await sdk.threads.getState(thread.thread_id, undefined, {
      select: ["values.messages"],
    });
    expect(Object.keys(messagesOnly)).toEqual(["values"]);
    expect(Object.keys(messagesOnly.values as object)).toEqual(["messages"]);
    const next = await sdk.threads.getState(thread.thread_id, undefined, { select: ["next", "checkpoint"] });
    expect(Object.keys(next).sort()).toEqual(["checkpoint", "next"]);
    expect(next.next).toEqual(["approve"]);
    const history = await sdk.threads.getHistory(thread.thread_id, { limit: 2, select: ["metadata"] });
    expect(history.map((h) => Object.keys(h))).toEqual([["metadata"], ["metadata"]]);
    const bad = await t.fetch(`/threads/${thread.thread_id}/state?select=valuez`);
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: string }).detail).toContain('unknown state field "valuez"');
  });

  it("a thread stream takes several modes at once: runs' starts and ends with the values", async () => {
    const thread = await sdk.threads.create();
    const stop = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      try {
        // From the thread's first kept event ("-"), so the run below cannot start before the join.
        for await (const part of sdk.threads.joinStream(thread.thread_id, {
          streamMode: ["lifecycle", "state_update"],
          lastEventId: "-",
          signal: stop.signal,
        })) {
          seen.push(part.event);
          if (part.event === "values" && seen.filter((e) => e === "values").length === 2) stop.abort();
        }
      } catch (error) {
        if (!stop.signal.aborted) throw error;
      }
    })();
    await sdk.runs.wait(thread.thread_id, "chat", { input: { messages: [{ role: "user", content: "hi" }] } });
    await reading;
    expect(seen).toEqual(["metadata", "values", "values"]);

    const broken = await t.fetch(
      `/threads/${thread.thread_id}/stream?stream_mode=${encodeURIComponent("[x")}`,
    );
    expect(broken.status).toBe(422);
  });

  it("advertises strict_resume and stream_namespaces in /info", async () => {
    const info = (await (await t.fetch("/info")).json()) as { flags: Record<string, boolean> };
    expect(info.flags).toMatchObject({ strict_resume: true, stream_namespaces: true });
  });

  it("takes URL-encoded path segments, as SDK 1.15 encodes them", async () => {
    // Every character percent-encoded: the path variables are what the segments decode to.
    const encoded = (text: string) =>
      [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");
    const thread = await sdk.threads.create();
    const drawing = await t.fetch(`/assistants/${encoded("chat")}/graph`);
    expect(((await drawing.json()) as { nodes: { id: string }[] }).nodes.map((n) => n.id)).toContain("agent");
    const got = await t.fetch(`/threads/${encoded(thread.thread_id)}`);
    expect(((await got.json()) as { thread_id: string }).thread_id).toBe(thread.thread_id);
  });
});
