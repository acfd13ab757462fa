import { create, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { CreateAssistantRequestSchema } from "../gen/agentplane/agents/v1/assistant_service_pb.js";
import {
  RunSchema as AgentRunSchema,
  CreateRunBatchRequestSchema,
  CreateRunRequestSchema,
} from "../gen/agentplane/agents/v1/run_service_pb.js";
import {
  CreateThreadRequestSchema,
  ThreadStateSchema,
} from "../gen/agentplane/agents/v1/thread_service_pb.js";
import { RunSchema } from "../gen/agentplane/tracing/v1/run_service_pb.js";
import { normalizeJson, toPlain, toRequestInit, valueJson } from "./plain-json.js";

/** The proto JSON (REST's shape) of what the SDK would send for `plain`. */
function sentAs<T extends Parameters<typeof create>[0]>(schema: T, plain: unknown) {
  return toJson(schema, create(schema, toRequestInit(schema, plain) as never), { useProtoFieldName: true });
}

function refusal(call: () => unknown): ConnectError {
  try {
    call();
  } catch (error) {
    if (error instanceof ConnectError) return error;
    throw error;
  }
  throw new Error("expected the call to throw");
}

describe("requests", () => {
  it("turns plain JSON in Value fields into Values, as JSON.stringify would write it", () => {
    const sent = sentAs(CreateRunRequestSchema, {
      assistantId: "agent",
      input: { messages: [{ role: "human", content: "hi" }], skipped: undefined, at: new Date(0) },
      streamMode: ["values", "updates"],
      multitaskStrategy: "enqueue",
      afterSeconds: 1.5,
      metadata: null,
      config: { tags: [undefined, () => 1, "t"] },
    });
    expect(sent).toEqual({
      assistant_id: "agent",
      input: { messages: [{ role: "human", content: "hi" }], at: "1970-01-01T00:00:00.000Z" },
      stream_mode: ["values", "updates"],
      multitask_strategy: "enqueue",
      after_seconds: 1.5,
      metadata: null,
      config: { tags: [null, null, "t"] },
    });
  });

  it("converts repeated Value fields and Values inside nested messages", () => {
    expect(sentAs(CreateRunBatchRequestSchema, { runs: [{ assistant_id: "a" }, "b"] })).toEqual({
      runs: [{ assistant_id: "a" }, "b"],
    });
    const thread = sentAs(CreateThreadRequestSchema, {
      supersteps: [{ updates: [{ values: { n: 1 }, asNode: "draft" }] }],
    });
    expect(thread).toMatchObject({ supersteps: [{ updates: [{ values: { n: 1 }, as_node: "draft" }] }] });
  });

  it("normalises Struct fields of messages without Value fields too", () => {
    expect(
      sentAs(CreateAssistantRequestSchema, { graphId: "agent", metadata: { a: undefined, at: new Date(0) } }),
    ).toMatchObject({ graph_id: "agent", metadata: { at: "1970-01-01T00:00:00.000Z" } });
  });

  it("sends a message built with create as it is", () => {
    const message = create(CreateRunRequestSchema, { assistantId: "a", input: fromJson(ValueSchema, [1]) });
    expect(toRequestInit(CreateRunRequestSchema, message)).toBe(message);
  });

  it("refuses what JSON cannot hold, naming the field", () => {
    const cases: [unknown, string][] = [
      [
        { input: { n: 1n } },
        'field "input.n" is a bigint, which JSON cannot hold: send a number or a string',
      ],
      [{ input: [Number.POSITIVE_INFINITY] }, 'field "input[0]" is Infinity, which JSON cannot hold'],
      [{ input: Symbol("s") }, 'field "input" is a symbol, which JSON cannot hold'],
      [{ runs: "x" }, 'field "runs" must be an array'],
    ];
    for (const [request, message] of cases) {
      const schema = "runs" in (request as object) ? CreateRunBatchRequestSchema : CreateRunRequestSchema;
      const error = refusal(() => toRequestInit(schema, request));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toBe(message);
    }
    const nested = refusal(() =>
      toRequestInit(CreateThreadRequestSchema, { supersteps: [{ updates: [{}, { values: { x: 2n } }] }] }),
    );
    expect(nested.rawMessage).toBe(
      'field "supersteps[0].updates[1].values.x" is a bigint, which JSON cannot hold: send a number or a string',
    );
    expect(refusal(() => toRequestInit(CreateRunRequestSchema, "run")).rawMessage).toBe(
      "the request must be an object",
    );
  });

  it("refuses a cycle but not a value seen twice", () => {
    const shared = { a: 1 };
    expect(normalizeJson({ x: shared, y: [shared] }, "input")).toEqual({ x: { a: 1 }, y: [{ a: 1 }] });
    const cyclic: unknown[] = [];
    cyclic.push({ back: cyclic });
    expect(refusal(() => normalizeJson(cyclic, "input")).rawMessage).toBe(
      'field "input[0].back" refers to itself (a cycle), which JSON cannot hold',
    );
  });

  it("calls toJSON with the member name or index, as JSON.stringify does", () => {
    const keys: string[] = [];
    const spy = { toJSON: (key: string) => keys.push(key) };
    normalizeJson({ first: spy, list: [spy, spy] }, "input");
    expect(keys).toEqual(["first", "0", "1"]);
  });
});

describe("answers", () => {
  it("turns Value, repeated Value and ListValue fields into plain values, in nested messages too", () => {
    const state = fromJson(ThreadStateSchema, {
      values: { topic: "x" },
      next: ["draft"],
      tasks: [{ id: "t", name: "draft", error: null, interrupts: [{ id: "i", value: 1 }], state: null }],
      createdAt: "2026-01-01T00:00:00Z",
      interrupts: [{ id: "i", value: 1 }],
    });
    const plain = toPlain(ThreadStateSchema, state) as Record<string, unknown>;
    expect(plain.$typeName).toBeUndefined();
    expect(plain.values).toEqual({ topic: "x" });
    expect(plain.createdAt).toBe("2026-01-01T00:00:00Z");
    expect(plain.interrupts).toEqual([{ id: "i", value: 1 }]);
    expect(plain.tasks).toEqual([
      { id: "t", name: "draft", error: null, interrupts: [{ id: "i", value: 1 }], state: null },
    ]);
    expect(plain.checkpoint).toBeUndefined();
    const run = fromJson(RunSchema, { id: "r", tags: ["a"], events: [{ name: "e" }] });
    expect(toPlain(RunSchema, run)).toMatchObject({ id: "r", tags: ["a"], events: [{ name: "e" }] });
  });

  it("reads a Value as protobuf-es's toJson does", () => {
    const json: JsonValue = { a: [1, "two", null, true, { b: [] }, {}], c: -0.5, d: "" };
    const value = fromJson(ValueSchema, json);
    expect(valueJson(value)).toEqual(toJson(ValueSchema, value));
    expect(valueJson(value)).toEqual(json);
  });

  it("leaves messages without Value fields as protobuf-es made them", () => {
    const run = create(AgentRunSchema, { runId: "r", metadata: { a: 1 } });
    expect(toPlain(AgentRunSchema, run)).toBe(run);
  });
});
