import { toJson } from "@bufbuild/protobuf";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { ThreadSchema } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import { toPlainJson } from "../../runtime/plain-json.js";
import type { ThreadRecord } from "../../store/agents/thread-store.js";
import { parseInclude } from "./thread-requests.js";
import { parseExtract, parseSelect, threadView } from "./thread-view.js";

const record: ThreadRecord = {
  threadId: "01a1fcbd-0363-7000-961f-f97b8253fd83",
  metadata: { graph_id: "agent", tags: ["a", "b"] },
  config: {},
  status: "idle",
  values: {
    messages: [
      { type: "human", content: "hi" },
      { type: "ai", content: "yo" },
    ],
  },
  interrupts: {},
  error: null,
  createdAt: new Date("2026-01-01T00:00:00Z"),
  updatedAt: new Date("2026-01-01T00:00:01Z"),
  stateUpdatedAt: new Date("2026-01-01T00:00:02Z"),
  ttl: null,
};

const rest = (thread: ReturnType<typeof threadView>) =>
  toJson(ThreadSchema, thread, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<
    string,
    unknown
  >;

describe("extract paths", () => {
  it("picks keys and indexes, negative ones from the end, and null when missing", () => {
    const extract = parseExtract({
      last: "values.messages[-1].content",
      first: "values.messages[0]",
      tag: "metadata.tags[1]",
      missing: "values.messages[7].content",
      whole: "metadata",
    });
    expect(rest(threadView(record, { ...(extract ? { extract } : {}) })).extracted).toEqual({
      last: "yo",
      first: { type: "human", content: "hi" },
      tag: "b",
      missing: null,
      whole: record.metadata,
    });
  });

  it.each([
    ["secrets.a", "must start with one of values, metadata, config, interrupts"],
    ["valuesx", "must start with one of"],
    ["values.", "is malformed at character 7"],
    ["values[x]", "is malformed at character 7"],
    ["values.a]", "is malformed at character 9"],
  ])("rejects %s", (path, message) => {
    expect(() => parseExtract({ a: path })).toThrow(message);
  });
});

describe("select and include", () => {
  it("emits only the selected fields", () => {
    const select = parseSelect(["thread_id", "values"]);
    expect(Object.keys(rest(threadView(record, select ? { select } : {}))).sort()).toEqual([
      "thread_id",
      "values",
    ]);
    expect(parseSelect([])).toBeUndefined();
    expect(() => parseSelect(["password"])).toThrow('select: unknown field "password"');
  });

  it("reads include as names or as the SDK's JSON array", () => {
    expect([...parseInclude(["ttl"])]).toEqual(["ttl"]);
    expect([...parseInclude(['["ttl"]'])]).toEqual(["ttl"]);
    expect(() => parseInclude(["[oops"])).toThrow('include "[oops" is not a JSON array of strings');
    expect(() => parseInclude(["values"])).toThrow('include accepts only "ttl"');
  });
});

describe("plain JSON of graph state", () => {
  it("flattens LangChain messages to their fields plus type and drops undefined", () => {
    const json = toPlainJson({
      messages: [new HumanMessage({ content: "hi", id: "1" }), new AIMessage({ content: "yo", id: "2" })],
      when: new Date("2026-01-01T00:00:00Z"),
      gone: undefined,
      list: [1, undefined, Number.NaN],
    });
    expect(json).toEqual({
      messages: [
        { content: "hi", id: "1", type: "human", additional_kwargs: {}, response_metadata: {} },
        expect.objectContaining({ content: "yo", id: "2", type: "ai", tool_calls: [] }),
      ],
      when: "2026-01-01T00:00:00.000Z",
      list: [1, null, null],
    });
  });
});
