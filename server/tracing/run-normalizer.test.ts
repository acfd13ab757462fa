import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { normalizeFeedback, normalizeRun } from "./run-normalizer.js";

const ROOT = "01a1fc65-89ac-7000-8000-022bd5fdeb2d";
const CHILD = "01a1fc65-89ac-7000-8000-022bd5fdeb2e";
const ROOT_DOTTED = `20261121T043755244001Z${ROOT}`;
const CHILD_DOTTED = `${ROOT_DOTTED}.20261121T043755244002Z${CHILD}`;

/** A post as the JS SDK sends it (PROBE): ISO start_time, epoch-ms end_time, child_runs ignored. */
const sdkPost = {
  id: CHILD,
  name: "fake-llm",
  run_type: "llm",
  start_time: "2026-11-21T04:37:55.244002Z",
  end_time: 1795235875306,
  parent_run_id: ROOT,
  trace_id: ROOT,
  dotted_order: CHILD_DOTTED,
  session_name: "probe",
  tags: ["a"],
  child_runs: [],
  inputs: { prompt: "hi" },
  outputs: { text: "x", usage_metadata: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } },
  extra: { metadata: { ls_model_name: "fake" } },
  events: [
    { name: "start", time: "2026-11-21T04:37:55.244002Z" },
    { name: "new_token", time: 1795235875300 },
  ],
};

function invalidMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    return (error as ConnectError).rawMessage;
  }
  throw new Error("expected INVALID_ARGUMENT");
}

describe("normalizeRun", () => {
  it("derives the stored fields of an SDK post", () => {
    expect(normalizeRun(sdkPost, "post")).toMatchObject({
      id: CHILD,
      project: { name: "probe" },
      traceId: ROOT,
      parentRunId: ROOT,
      parentRunIds: [ROOT],
      isRoot: false,
      startTime: "2026-11-21T04:37:55.244002Z",
      endTime: "2026-11-21T04:37:55.306000Z",
      dottedOrder: CHILD_DOTTED,
      positioned: true,
      tags: ["a"],
      promptTokens: 3,
      completionTokens: 4,
      totalTokens: 7,
      totalCost: null,
      firstTokenTime: "2026-11-21T04:37:55.300000Z",
    });
  });

  it("reads usage_metadata from extra.metadata, sums missing totals, and reads costs", () => {
    const run = normalizeRun(
      {
        ...sdkPost,
        outputs: {},
        extra: {
          metadata: {
            usage_metadata: { input_tokens: 2, output_tokens: 5, input_cost: 0.1, output_cost: "0.2" },
          },
        },
      },
      "post",
    );
    expect(run).toMatchObject({
      totalTokens: 7,
      promptCost: "0.1",
      completionCost: "0.2",
      totalCost: "0.30000000000000004",
    });
  });

  it("reads LangChain's llm_output.token_usage", () => {
    const outputs = {
      llm_output: { token_usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } },
    };
    expect(normalizeRun({ ...sdkPost, outputs, extra: null }, "post")).toMatchObject({
      totalTokens: 3,
      promptTokens: 1,
    });
  });

  it("makes a root run without dotted_order its own trace, starting now", () => {
    const now = new Date("2026-01-02T03:04:05.678Z");
    expect(normalizeRun({ id: ROOT, name: "r", run_type: "chain" }, "post", now)).toMatchObject({
      traceId: ROOT,
      isRoot: true,
      startTime: "2026-01-02T03:04:05.678000Z",
      dottedOrder: `20260102T030405678000Z${ROOT}`,
      project: { name: "default" },
    });
  });

  it("takes a patch's parent from its dotted_order, and marks a patch without one as update-only", () => {
    expect(normalizeRun({ id: CHILD, dotted_order: CHILD_DOTTED, trace_id: ROOT }, "patch")).toMatchObject({
      parentRunId: ROOT,
      isRoot: false,
      positioned: true,
      name: null,
    });
    expect(normalizeRun({ id: CHILD, end_time: 1 }, "patch").positioned).toBe(false);
  });

  it("rejects bad runs naming the run and the rule", () => {
    expect(invalidMessage(() => normalizeRun({ id: "x" }, "post"))).toBe(
      'every post run needs an "id" that is a UUID, got "x"',
    );
    expect(invalidMessage(() => normalizeRun({ ...sdkPost, name: undefined }, "post"))).toBe(
      `run ${CHILD}: "name" is required when creating a run`,
    );
    expect(invalidMessage(() => normalizeRun({ ...sdkPost, run_type: "agent" }, "post"))).toBe(
      `run ${CHILD}: run_type must be one of tool, chain, llm, retriever, embedding, prompt, parser, got "agent"`,
    );
    expect(invalidMessage(() => normalizeRun({ ...sdkPost, start_time: "yesterday" }, "post"))).toContain(
      `run ${CHILD}: start_time must be an ISO 8601 timestamp`,
    );
    expect(invalidMessage(() => normalizeRun({ ...sdkPost, parent_run_id: undefined }, "post"))).toBe(
      `run ${CHILD}: dotted_order must contain a single part for root runs for run_id:${CHILD} trace_id:${ROOT} dotted_order:${CHILD_DOTTED} parent_run_id:None`,
    );
    expect(invalidMessage(() => normalizeRun({ ...sdkPost, tags: "a" }, "post"))).toBe(
      `run ${CHILD}: tags must be an array of strings`,
    );
    expect(invalidMessage(() => normalizeRun({ ...sdkPost, inputs: [1] }, "post"))).toBe(
      `run ${CHILD}: inputs must be a JSON object`,
    );
    expect(invalidMessage(() => normalizeRun({ ...sdkPost, dotted_order: undefined }, "post"))).toBe(
      `run ${CHILD}: dotted_order is required for child runs (runs with a parent_run_id)`,
    );
  });
});

describe("normalizeFeedback", () => {
  it("accepts a feedback item, booleans scoring 1 or 0", () => {
    expect(
      normalizeFeedback({ id: ROOT, run_id: CHILD, key: "correct", score: true, value: "yes", comment: "c" }),
    ).toEqual({
      id: ROOT,
      runId: CHILD,
      traceId: null,
      key: "correct",
      score: 1,
      value: "yes",
      comment: "c",
      correction: null,
      feedbackSource: null,
      sessionId: null,
    });
  });

  it("puts feedback on a trace on its root run, keeping correction and source", () => {
    const item = normalizeFeedback({
      id: ROOT,
      trace_id: CHILD,
      key: "k",
      correction: { answer: 42 },
      feedback_source: { type: "api", metadata: {} },
    });
    expect(item).toMatchObject({
      runId: CHILD,
      traceId: CHILD,
      correction: { answer: 42 },
      feedbackSource: { type: "api", metadata: {} },
    });
    expect(
      invalidMessage(() => normalizeFeedback({ id: ROOT, run_id: CHILD, key: "k", feedback_source: "api" })),
    ).toMatch(/feedback_source must be an object/);
  });

  it("rejects feedback without a key or run", () => {
    expect(invalidMessage(() => normalizeFeedback({ id: ROOT, run_id: CHILD }))).toBe(
      `feedback ${ROOT}: "key" is required`,
    );
    expect(invalidMessage(() => normalizeFeedback({ id: ROOT, key: "k" }))).toBe(
      `feedback ${ROOT}: "run_id" or "trace_id" is required (project-level feedback is not supported)`,
    );
  });
});
