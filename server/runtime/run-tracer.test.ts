import { RunnableLambda } from "@langchain/core/runnables";
import type { BaseTracer } from "@langchain/core/tracers/base";
import { describe, expect, it } from "vitest";
import { createLogger } from "../logger.js";
import { createRunTracing, type TraceRecord, traceProjectName } from "./run-tracer.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("debug", (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  return { log, lines };
}

const NOBODY = { apiKeyId: null, userId: null };
const RUN = { workspaceId: "ws", runId: "r1", graphId: "agent", kwargs: {}, creator: NOBODY };
/** Longer than any test: records are written when the test settles, not on a timer. */
const NO_TIMER_MS = 60_000;

/** A chain of `depth` runnables nested in one another, named `name`, run with `tracer`. */
async function runNested(tracer: BaseTracer, depth: number, name = "step"): Promise<void> {
  let inner = RunnableLambda.from((x: number) => x + 1).withConfig({ runName: name });
  for (let i = 0; i < depth; i++) {
    const child = inner;
    inner = RunnableLambda.from(async (x: number, config) => child.invoke(x, config)).withConfig({
      runName: name,
    });
  }
  await inner.invoke(1, { callbacks: [tracer] });
}

type Batch = { workspaceId: string; post: TraceRecord[]; patch: TraceRecord[] };

describe("createRunTracing", () => {
  it("writes a run that started and ended between writes as one finished record, nested", async () => {
    const batches: Batch[] = [];
    const tracing = createRunTracing({
      log: capture().log,
      flushDelayMs: NO_TIMER_MS,
      sink: async (workspaceId, _creator, batch) => {
        batches.push({ workspaceId, ...batch });
      },
    });
    await runNested(tracing.start(RUN), 2);
    await tracing.settle();
    expect(batches).toHaveLength(1);
    const [root, child, grandchild] = batches[0]?.post ?? [];
    expect(batches[0]?.patch).toEqual([]);
    expect(root?.trace_id).toBe(root?.id);
    expect(root).toMatchObject({ inputs: { input: 1 }, outputs: { output: 2 }, session_name: "agent" });
    expect(root?.end_time).toEqual(expect.any(Number));
    expect(child?.parent_run_id).toBe(root?.id);
    expect(String(grandchild?.dotted_order).startsWith(`${child?.dotted_order}.`)).toBe(true);
  });

  it("writes a start and a later end apart, the end without the inputs", async () => {
    const batches: Batch[] = [];
    const tracing = createRunTracing({
      log: capture().log,
      flushDelayMs: NO_TIMER_MS,
      sink: async (workspaceId, _creator, batch) => {
        batches.push({ workspaceId, ...batch });
      },
    });
    let entered!: () => void;
    let release!: () => void;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = RunnableLambda.from(async (x: number) => {
      entered();
      await gate;
      return x;
    });
    const done = held.invoke(1, { callbacks: [tracing.start(RUN)] });
    await inside;
    await tracing.settle();
    release();
    await done;
    await tracing.settle();
    expect(batches.map((b) => [b.post.length, b.patch.length])).toEqual([
      [1, 0],
      [0, 1],
    ]);
    expect(batches[1]?.patch[0]).not.toHaveProperty("inputs");
    expect(batches[1]?.patch[0]).toMatchObject({ outputs: { output: 1 } });
  });

  it("writes the runs of each creator apart, each batch with its creator", async () => {
    const batches: { creator: unknown; names: string[] }[] = [];
    const tracing = createRunTracing({
      log: capture().log,
      flushDelayMs: NO_TIMER_MS,
      sink: async (_ws, creator, batch) => {
        batches.push({ creator, names: batch.post.map((r) => String(r.name)) });
      },
    });
    const keyed = { apiKeyId: "k1", userId: "u1" };
    await runNested(tracing.start(RUN), 0, "nobody's");
    await runNested(tracing.start({ ...RUN, runId: "r2", creator: keyed }), 0, "keyed");
    await runNested(tracing.start({ ...RUN, runId: "r3", creator: { ...keyed } }), 0, "keyed again");
    await tracing.settle();
    expect(batches).toEqual([
      { creator: NOBODY, names: ["nobody's"] },
      { creator: keyed, names: ["keyed", "keyed again"] },
    ]);
  });

  it("retries a refused batch trace by trace, logging the trace that is refused", async () => {
    const { log, lines } = capture();
    const stored: string[] = [];
    const tracing = createRunTracing({
      log,
      flushDelayMs: NO_TIMER_MS,
      sink: async (_ws, _creator, batch) => {
        if (batch.post.some((r) => r.name === "bad")) throw new Error("refused");
        stored.push(...batch.post.map((r) => String(r.name)));
      },
    });
    await runNested(tracing.start(RUN), 0, "good");
    await runNested(tracing.start({ ...RUN, runId: "r2" }), 1, "bad");
    await tracing.settle();
    expect(stored).toEqual(["good"]);
    expect(lines.map((l) => [l.message, l.records])).toEqual([
      ["agent run trace records were not stored", 2],
    ]);
  });

  it("drops what does not fit in the buffer and says how much", async () => {
    const { log, lines } = capture();
    const stored: TraceRecord[] = [];
    const tracing = createRunTracing({
      log,
      maxPending: 2,
      flushDelayMs: NO_TIMER_MS,
      sink: async (_ws, _creator, batch) => {
        stored.push(...batch.post);
      },
    });
    await runNested(tracing.start(RUN), 3);
    await tracing.settle();
    expect(stored).toHaveLength(2);
    expect(lines.map((l) => [l.message, l.dropped])).toEqual([
      // Two runs did not fit: their starts and their ends.
      ["agent run trace buffer was full; records were dropped", 4],
    ]);
  });
});

describe("trace records", () => {
  it("leave out the metadata checkpoints leave out (forwarded headers, auth fields)", async () => {
    const posts: TraceRecord[] = [];
    const tracing = createRunTracing({
      log: capture().log,
      flushDelayMs: NO_TIMER_MS,
      sink: async (_ws, _creator, batch) => {
        posts.push(...batch.post);
      },
    });
    await RunnableLambda.from((x: number) => x).invoke(1, {
      callbacks: [tracing.start(RUN)],
      metadata: { "x-team-secret": "s", langgraph_auth_user_id: "u", thread_id: "t1" },
    });
    await tracing.settle();
    expect(posts[0]?.extra).toEqual({ metadata: { thread_id: "t1" } });
  });
});

describe("traceProjectName", () => {
  it("takes langsmith_tracer.project_name, else the graph id", () => {
    expect(traceProjectName(RUN)).toBe("agent");
    expect(traceProjectName({ ...RUN, kwargs: { langsmith_tracer: { project_name: " evals " } } })).toBe(
      "evals",
    );
    expect(traceProjectName({ ...RUN, kwargs: { langsmith_tracer: { project_name: 3 } } })).toBe("agent");
  });
});
