import { describe, expect, it } from "vitest";
import { type RunKwargs, runConfigOf, runKwargsJson, runKwargsOf } from "./run-kwargs.js";

const kwargs: RunKwargs = {
  input: { messages: [{ role: "human", content: "hi" }] },
  command: { resume: "yes", goto: ["a", { node: "b", input: 1 }] },
  config: { tags: ["t"], recursion_limit: 5, configurable: { user: "u" }, run_name: "named" },
  context: { model: "m" },
  stream_mode: ["values", "updates"],
  subgraphs: true,
  resumable: false,
  interrupt_before: "*",
  interrupt_after: ["b"],
  checkpoint: { checkpoint_id: "c1", checkpoint_ns: "" },
  durability: "sync",
  webhook: "https://example.com/hook",
  feedback_keys: ["score"],
  temporary: true,
  on_disconnect: "cancel",
  langsmith_tracer: { project_name: "p" },
  extra: {},
};

describe("runKwargsOf", () => {
  it("reads back what runKwargsJson stores, through JSON", () => {
    const stored = JSON.parse(JSON.stringify(runKwargsJson(kwargs)));
    expect(runKwargsOf(stored)).toEqual(kwargs);
  });

  it("stores config keys beside tags, recursion_limit and configurable as they are", () => {
    expect(runKwargsJson(kwargs).config).toEqual({
      tags: ["t"],
      recursion_limit: 5,
      configurable: { user: "u" },
      run_name: "named",
    });
  });

  it("gives the API's defaults to keys an older server did not store", () => {
    const read = runKwargsOf({ input: null, config: {}, stream_mode: ["values"] });
    expect(read).toMatchObject({
      command: null,
      config: { configurable: {} },
      context: {},
      durability: null,
      on_disconnect: "continue",
      temporary: false,
      langsmith_tracer: null,
      checkpoint: null,
    });
  });

  it("keeps keys it does not know, both ways", () => {
    const read = runKwargsOf({ ...runKwargsJson(kwargs), future_option: { version: 2 } });
    expect(read.extra).toEqual({ future_option: { version: 2 } });
    expect(runKwargsJson(read).future_option).toEqual({ version: 2 });
  });

  it.each([
    [{ stream_mode: ["values", "nonsense"] }, /stream_mode/],
    [{ stream_mode: "values" }, /stream_mode must be a list/],
    [{ config: { tags: "one" } }, /config\.tags/],
    [{ config: { configurable: [] } }, /config\.configurable/],
    [{ durability: "sometimes" }, /durability/],
    [{ checkpoint: { checkpoint_ns: "" } }, /checkpoint/],
    [{ temporary: "yes" }, /temporary/],
  ])("refuses a malformed payload %j, naming the key", (payload, message) => {
    expect(() => runKwargsOf(payload)).toThrow(message);
    expect(() => runKwargsOf(payload)).toThrow(expect.objectContaining({ name: "RunKwargsError" }));
  });
});

describe("runConfigOf", () => {
  it("keeps a merged config's keys and defaults configurable", () => {
    expect(runConfigOf({ run_name: "r" })).toEqual({ run_name: "r", configurable: {} });
  });
});
