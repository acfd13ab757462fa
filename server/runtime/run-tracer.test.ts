import { RunnableLambda } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import { createLogger } from "../logger.js";
import { createRunTracing, type TraceRecord, traceProjectName } from "./run-tracer.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("debug", (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  return { log, lines };
}

const RUN = { workspaceId: "ws", runId: "r1", graphId: "agent", kwargs: {} };

/** A chain of `depth` nested runnables, run with `handler` in its callbacks. */
async function runNested(handler: unknown, depth: number): Promise<void> {
  let inner = RunnableLambda.from((x: number) => x + 1);
  for (let i = 0; i < depth; i++) {
    const child = inner;
    inner = RunnableLambda.from(async (x: number, config) => child.invoke(x, config));
  }
  await inner.invoke(1, { callbacks: [handler as never] });
}

describe("createRunTracing", () => {
  it("writes each run's start and end, batched, with nested dotted orders", async () => {
    const batches: { post: TraceRecord[]; patch: TraceRecord[] }[] = [];
    const tracing = createRunTracing({
      log: capture().log,
      sink: async (_ws, batch) => {
        batches.push(batch);
      },
    });
    const trace = tracing.start(RUN);
    await runNested(trace.handler, 2);
    trace.finish();
    await tracing.settle();
    const posts = batches.flatMap((b) => b.post);
    const patches = batches.flatMap((b) => b.patch);
    expect(posts).toHaveLength(3);
    expect(patches).toHaveLength(3);
    const [root, child, grandchild] = posts;
    expect(root?.trace_id).toBe(root?.id);
    expect(child?.parent_run_id).toBe(root?.id);
    expect(String(grandchild?.dotted_order).startsWith(`${child?.dotted_order}.`)).toBe(true);
    expect(posts.every((p) => p.session_name === "agent")).toBe(true);
    expect(patches.find((p) => p.id === root?.id)?.outputs).toEqual({ output: 2 });
  });

  it("logs a failed write and goes on; a full buffer drops records and says so once", async () => {
    const { log, lines } = capture();
    const tracing = createRunTracing({
      log,
      maxPending: 2,
      flushDelayMs: 60_000,
      sink: () => Promise.reject(new Error("database down")),
    });
    const trace = tracing.start(RUN);
    await runNested(trace.handler, 3);
    trace.finish();
    await tracing.settle();
    expect(lines.map((l) => l.message)).toEqual([
      "agent run trace buffer is full; records are dropped",
      "agent run trace records were not stored",
    ]);
    expect(lines[1]).toMatchObject({ records: 2 });
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
