import { create, fromBinary, fromJson, type JsonValue, toBinary } from "@bufbuild/protobuf";
import { StructSchema, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { InputShapesSchema } from "../../../test/gen/agentplane/testing/v1/input_shapes_pb.js";
import { MAX_JSON_DEPTH } from "./input-limits.js";
import { describeProblem, type InputProblem, textProblem } from "./input-problem.js";
import { findDecodedJsonProblem, findJsonProblem } from "./json-screen.js";
import { findMessageProblem } from "./message-screen.js";

const NUL = "contains the NUL character (\\u0000), which cannot be stored";
const tooDeep = `nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep, the most a request may`;

/** `[[[...]]]` with `levels` arrays, built without recursion. */
function nestedArrays(levels: number): JsonValue {
  let value: JsonValue = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

/** `{"a":{"a":...{}}}` with `levels` objects. */
function nestedObjects(levels: number): JsonValue {
  let value: JsonValue = {};
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

function sentence(problem: InputProblem | undefined): string | undefined {
  return problem && describeProblem(problem);
}

describe("textProblem", () => {
  it("accepts text with complete characters, surrogate pairs included", () => {
    expect(textProblem("plain")).toBeUndefined();
    expect(textProblem("emoji \ud83d\ude00 and é")).toBeUndefined();
  });

  it("names NUL and each kind of lone surrogate for what it is", () => {
    expect(textProblem("a\u0000b")).toBe(NUL);
    expect(textProblem("x\ud800")).toContain("unpaired UTF-16 surrogate (\\ud800)");
    expect(textProblem("\udc00x")).toContain("unpaired UTF-16 surrogate (\\udc00)");
    expect(textProblem("\udc00\ud800")).toContain("(\\udc00)");
    expect(textProblem("x\ud800")).not.toContain("NUL");
  });
});

describe("findJsonProblem", () => {
  it("accepts the deepest nesting allowed and refuses one level more, naming where", () => {
    expect(findJsonProblem(nestedObjects(MAX_JSON_DEPTH))).toBeUndefined();
    expect(findJsonProblem(nestedArrays(MAX_JSON_DEPTH))).toBeUndefined();
    const problem = findJsonProblem(nestedObjects(MAX_JSON_DEPTH + 1));
    expect(problem?.reason).toBe(tooDeep);
    expect(problem?.path).toHaveLength(MAX_JSON_DEPTH);
    expect(sentence(problem)).toBe(`field "a.a.a.a.a.a.a.a…" ${tooDeep}`);
  });

  it("refuses a million levels without exhausting the stack", () => {
    expect(findJsonProblem(nestedArrays(1_000_000))?.reason).toBe(tooDeep);
  });

  it("counts levels from the enclosing request when given one", () => {
    expect(findJsonProblem(nestedArrays(MAX_JSON_DEPTH - 1), undefined, 2)).toBeUndefined();
    expect(findJsonProblem(nestedArrays(MAX_JSON_DEPTH), undefined, 2)?.reason).toBe(tooDeep);
  });

  it("names the string and member that hold NUL or a lone surrogate", () => {
    expect(sentence(findJsonProblem({ a: { b: ["ok", "x\u0000"] } }))).toBe(`field "a.b[1]" ${NUL}`);
    expect(sentence(findJsonProblem({ a: { "k\u0000": 1 } }))).toBe(
      `field "a" has a member name "k\\u0000" that ${NUL}`,
    );
    expect(sentence(findJsonProblem({ "odd key": ["\udfff"] }))).toMatch(
      /^field "\["odd key"\]\[0\]" contains an unpaired UTF-16 surrogate \(\\udfff\)/,
    );
    expect(sentence(findJsonProblem("\ud800"))).toMatch(/^the request contains an unpaired/);
  });

  it("refuses numbers JSON cannot carry, which 1e999 parses to", () => {
    expect(sentence(findJsonProblem(JSON.parse('{"n":[1e999]}')))).toBe(
      'field "n[0]" must be a finite number, got Infinity',
    );
  });
});

describe("findDecodedJsonProblem", () => {
  const screen = (text: string) => findDecodedJsonProblem(JSON.parse(text), text);

  it("refuses NUL and lone surrogates, which only a \\u escape can put in text decoded from UTF-8", () => {
    expect(sentence(screen('{"a":["ok","x\\u0000"]}'))).toBe(`field "a[1]" ${NUL}`);
    expect(sentence(screen('{"k\\u0000":1}'))).toBe(`the request has a member name "k\\u0000" that ${NUL}`);
    expect(sentence(screen('{"a":"\\udfff"}'))).toMatch(/^field "a" contains an unpaired UTF-16 surrogate/);
    expect(screen('{"a":"\\ud83d\\ude00 \\u00e9"}')).toBeUndefined();
  });

  it("checks nesting and numbers in text without escapes", () => {
    expect(screen(JSON.stringify(nestedObjects(MAX_JSON_DEPTH)))).toBeUndefined();
    expect(screen(JSON.stringify(nestedObjects(MAX_JSON_DEPTH + 1)))?.reason).toBe(tooDeep);
    expect(sentence(screen('{"n":[1e999]}'))).toBe('field "n[0]" must be a finite number, got Infinity');
    expect(screen('{"text":"plain, é and 😀 as UTF-8","n":[1,2.5e10]}')).toBeUndefined();
  });
});

describe("findMessageProblem", () => {
  const clean = {
    text: "t",
    texts: ["a", "b"],
    labels: { k: "v" },
    childrenByNumber: { 7: { text: "c" } },
    choice: { case: "chosenWrapped" as const, value: { value: "w" } },
    wrapped: "w",
    wrappedList: [{ value: "w" }],
    score: 1.5,
    scores: [2.5],
    wrappedScore: 3.5,
    data: { a: { b: [1, "x", null] } },
    dataList: [{ k: "v" }],
    value: create(ValueSchema, { kind: { case: "stringValue", value: "v" } }),
    at: { seconds: 1_700_000_000n, nanos: 5 },
    ats: [{ seconds: -62_135_596_800n, nanos: 0 }],
    child: { child: { text: "deep" } },
    raw: new Uint8Array([0]),
  };
  const shapes = (patch: object) => create(InputShapesSchema, { ...clean, ...patch } as never);

  it("accepts a message whose every field holds a storable value", () => {
    expect(findMessageProblem(InputShapesSchema, shapes({}))).toBeUndefined();
  });

  it.each([
    ["text", { text: "\u0000" }],
    ["texts[1]", { texts: ["a", "\u0000"] }],
    ["labels.k", { labels: { k: "\u0000" } }],
    ['children_by_number["7"].text', { childrenByNumber: { 7: { text: "\u0000" } } }],
    ["chosen_text", { choice: { case: "chosenText", value: "\u0000" } }],
    ["chosen_wrapped", { choice: { case: "chosenWrapped", value: { value: "\u0000" } } }],
    ["wrapped", { wrapped: "\u0000" }],
    ["wrapped_list[0]", { wrappedList: [{ value: "\u0000" }] }],
    ["data.a.b[1]", { data: { a: { b: [1, "\u0000"] } } }],
    ["data_list[0].k", { dataList: [{ k: "\u0000" }] }],
    ["child.child.text", { child: { child: { text: "\u0000" } } }],
  ])("names %s when it holds NUL", (path, patch) => {
    expect(sentence(findMessageProblem(InputShapesSchema, shapes(patch)))).toBe(`field "${path}" ${NUL}`);
  });

  it("checks map keys and Struct member names", () => {
    expect(sentence(findMessageProblem(InputShapesSchema, shapes({ labels: { "\ud800": "v" } })))).toMatch(
      /^field "labels" has a member name "\\ud800" that contains an unpaired UTF-16 surrogate/,
    );
    expect(sentence(findMessageProblem(InputShapesSchema, shapes({ data: { "k\u0000": 1 } })))).toBe(
      `field "data" has a member name "k\\u0000" that ${NUL}`,
    );
  });

  it("walks google.protobuf.Value and ListValue messages as protobuf-es decodes them", () => {
    const one = (json: JsonValue) =>
      sentence(findMessageProblem(InputShapesSchema, fromJson(InputShapesSchema, json as never)));
    expect(one({ value: { a: [{ b: "\u0000" }] } })).toBe(`field "value.a[0].b" ${NUL}`);
    expect(one({ values: ["ok", { k: "\udc00" }] })).toMatch(/^field "values\[1\]\.k" contains an unpaired/);
    expect(one({ list: [1, ["x", { "bad\u0000": 2 }]] })).toBe(
      `field "list[1][1]" has a member name "bad\\u0000" that ${NUL}`,
    );
  });

  it("refuses a google.protobuf.Value that sets no kind, at the top and inside Structs and lists", () => {
    const empty = create(ValueSchema, {});
    const kinds = /is a google\.protobuf\.Value that sets none of its kinds; send null_value for null/;
    expect(sentence(findMessageProblem(InputShapesSchema, shapes({ value: empty })))).toMatch(
      new RegExp(`^field "value" ${kinds.source}`),
    );
    const inList = create(ValueSchema, {
      kind: {
        case: "listValue",
        value: { values: [create(ValueSchema, { kind: { case: "boolValue", value: true } }), empty] },
      },
    });
    const decoded = fromBinary(InputShapesSchema, toBinary(InputShapesSchema, shapes({ values: [inList] })));
    expect(sentence(findMessageProblem(InputShapesSchema, decoded))).toMatch(
      new RegExp(`^field "values\\[0\\]\\[1\\]" ${kinds.source}`),
    );
    const nullValue = create(ValueSchema, { kind: { case: "nullValue", value: 0 } });
    expect(findMessageProblem(InputShapesSchema, shapes({ value: nullValue }))).toBeUndefined();
  });

  it("refuses floats that are not finite, on every protocol's decoding", () => {
    const binary = fromBinary(
      InputShapesSchema,
      toBinary(InputShapesSchema, shapes({ scores: [1, Number.NaN] })),
    );
    expect(sentence(findMessageProblem(InputShapesSchema, binary))).toBe(
      'field "scores[1]" must be a finite number, got NaN',
    );
    expect(sentence(findMessageProblem(InputShapesSchema, shapes({ wrappedScore: -Infinity })))).toBe(
      'field "wrapped_score" must be a finite number, got -Infinity',
    );
    const nanValue = create(ValueSchema, { kind: { case: "numberValue", value: Number.POSITIVE_INFINITY } });
    expect(sentence(findMessageProblem(InputShapesSchema, shapes({ values: [nanValue] })))).toBe(
      'field "values[0]" must be a finite number, got Infinity',
    );
  });

  it("refuses timestamps outside years 0001 to 9999", () => {
    const range = "must be a timestamp from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z";
    expect(
      sentence(
        findMessageProblem(InputShapesSchema, shapes({ at: { seconds: 253_402_300_800n, nanos: 0 } })),
      ),
    ).toBe(`field "at" ${range}`);
    expect(
      sentence(
        findMessageProblem(InputShapesSchema, shapes({ ats: [{ seconds: -62_135_596_801n, nanos: 0 }] })),
      ),
    ).toBe(`field "ats[0]" ${range}`);
    expect(sentence(findMessageProblem(InputShapesSchema, shapes({ at: { seconds: 0n, nanos: -1 } })))).toBe(
      `field "at" ${range}`,
    );
    expect(
      findMessageProblem(
        InputShapesSchema,
        shapes({ at: { seconds: 253_402_300_799n, nanos: 999_999_999 } }),
      ),
    ).toBeUndefined();
  });

  it("counts levels as the message's JSON form does, through messages, Structs and Values", () => {
    // Root (1) → data (2) → MAX - 2 more objects: MAX levels in all.
    expect(
      findMessageProblem(InputShapesSchema, shapes({ data: nestedObjects(MAX_JSON_DEPTH - 1) })),
    ).toBeUndefined();
    expect(
      findMessageProblem(InputShapesSchema, shapes({ data: nestedObjects(MAX_JSON_DEPTH) }))?.reason,
    ).toBe(tooDeep);
    let value: Value = create(ValueSchema, { kind: { case: "stringValue", value: "leaf" } });
    for (let i = 1; i < MAX_JSON_DEPTH; i++) {
      value = create(ValueSchema, {
        kind: { case: "structValue", value: create(StructSchema, { fields: { a: value } }) },
      });
    }
    // Root (1) + MAX - 1 Structs: the deepest allowed; one more is refused.
    expect(findMessageProblem(InputShapesSchema, shapes({ value }))).toBeUndefined();
    const deeper = create(ValueSchema, { kind: { case: "listValue", value: { values: [value] } } });
    expect(findMessageProblem(InputShapesSchema, shapes({ value: deeper }))?.reason).toBe(tooDeep);
    let child = {};
    for (let i = 0; i < MAX_JSON_DEPTH; i++) child = { child };
    expect(findMessageProblem(InputShapesSchema, create(InputShapesSchema, child))?.reason).toBe(tooDeep);
  });

  it("agrees with the JSON screen on the depth of a message's JSON form", () => {
    for (const levels of [MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1]) {
      const json = { list: nestedArrays(levels) } as JsonValue;
      const message = fromJson(InputShapesSchema, json as never, { recursionLimit: 1_000 });
      expect(findMessageProblem(InputShapesSchema, message)?.reason).toBe(findJsonProblem(json)?.reason);
    }
  });
});
