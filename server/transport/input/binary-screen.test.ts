import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { StructSchema, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { InputShapesSchema } from "../../../test/gen/agentplane/testing/v1/input_shapes_pb.js";
import { lengthPrefix, nestedMessageBytes } from "../../../test/support/hostile-input/nested-bytes.js";
import { findBinaryProblem } from "./binary-screen.js";
import { MAX_JSON_DEPTH } from "./input-limits.js";
import { describeProblem, type InputProblem } from "./input-problem.js";
import { findMessageProblem } from "./message-screen.js";

const tooDeep = `nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep, the most a request may`;

function sentence(problem: InputProblem | undefined): string | undefined {
  return problem && describeProblem(problem);
}

/** A google.protobuf.Value holding `levels` Structs inside one another, with a string at the bottom. */
function nestedStructs(levels: number): Value {
  let value: Value = create(ValueSchema, { kind: { case: "stringValue", value: "leaf" } });
  for (let i = 0; i < levels; i++) {
    value = create(ValueSchema, {
      kind: { case: "structValue", value: create(StructSchema, { fields: { a: value } }) },
    });
  }
  return value;
}

/**
 * InputShapes bytes whose `list` field holds `levels` ListValues inside one another: a ListValue's
 * `values` (1) hold a Value whose `list_value` (6) is the next ListValue; InputShapes.list is 16.
 */
function nestedListBytes(levels: number): Uint8Array {
  return nestedMessageBytes(levels, [lengthPrefix(6), lengthPrefix(1)], lengthPrefix(16));
}

describe("findBinaryProblem", () => {
  const full = create(InputShapesSchema, {
    text: "t",
    texts: ["a", "b"],
    labels: { k: "v" },
    childrenByNumber: { 7: { text: "c", data: { x: [1, { y: "z" }] } } },
    choice: { case: "chosenWrapped", value: { value: "w" } },
    wrapped: "w",
    score: 1.5,
    scores: [1, 2],
    data: { a: { b: [1, "x", null, true] } },
    dataList: [{ k: "v" }],
    value: nestedStructs(3),
    values: [nestedStructs(1)],
    list: { values: [nestedStructs(2)] },
    at: { seconds: 1_700_000_000n, nanos: 1 },
    child: { child: { text: "deep", count: 5n } },
    raw: new Uint8Array([0, 255]),
    count: -3n,
  });

  it("accepts what protobuf-es encodes", () => {
    expect(findBinaryProblem(InputShapesSchema, toBinary(InputShapesSchema, full))).toBeUndefined();
    expect(findBinaryProblem(InputShapesSchema, new Uint8Array(0))).toBeUndefined();
  });

  it("counts levels as the message screen does, and refuses what it refuses", () => {
    // Root (1) + value's MAX - 1 Structs: the deepest allowed.
    for (const levels of [MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH]) {
      const message = create(InputShapesSchema, { value: nestedStructs(levels) });
      const bytes = toBinary(InputShapesSchema, message);
      const decoded = fromBinary(InputShapesSchema, bytes, { recursionLimit: 1_000 });
      expect(findBinaryProblem(InputShapesSchema, bytes)?.reason).toBe(
        findMessageProblem(InputShapesSchema, decoded)?.reason,
      );
    }
    const deep = toBinary(
      InputShapesSchema,
      create(InputShapesSchema, { value: nestedStructs(MAX_JSON_DEPTH) }),
    );
    expect(sentence(findBinaryProblem(InputShapesSchema, deep))).toBe(
      `field "value.a.a.a.a.a.a.a…" ${tooDeep}`,
    );
  });

  it("refuses twenty thousand levels without exhausting the stack", () => {
    expect(findBinaryProblem(InputShapesSchema, nestedListBytes(20_000))?.reason).toBe(tooDeep);
    expect(findBinaryProblem(InputShapesSchema, nestedListBytes(MAX_JSON_DEPTH - 2))).toBeUndefined();
  });

  it("refuses strings that are not UTF-8, map keys included, naming them", () => {
    const text = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .bytes(new Uint8Array([0x61, 0xed, 0xa0, 0x80]))
      .finish();
    expect(sentence(findBinaryProblem(InputShapesSchema, text))).toBe(
      'field "text" is not valid UTF-8 text, as protobuf strings must be',
    );
    const entry = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .bytes(new Uint8Array([0xff]))
      .finish();
    const labels = new BinaryWriter().tag(3, WireType.LengthDelimited).bytes(entry).finish();
    expect(sentence(findBinaryProblem(InputShapesSchema, labels))).toMatch(
      /^field "labels" is not valid UTF-8/,
    );
    const list = toBinary(InputShapesSchema, create(InputShapesSchema, { texts: ["ok"] }));
    const bad = new BinaryWriter()
      .tag(2, WireType.LengthDelimited)
      .bytes(new Uint8Array([0xc0, 0xaf]))
      .finish();
    expect(sentence(findBinaryProblem(InputShapesSchema, Buffer.concat([list, bad])))).toMatch(
      /^field "texts\[1\]" is not valid UTF-8/,
    );
  });

  it("refuses a known field sent with another wire type, and broken framing", () => {
    const varintText = new BinaryWriter().tag(1, WireType.Varint).uint32(7).finish();
    expect(sentence(findBinaryProblem(InputShapesSchema, varintText))).toBe(
      'field "text" is encoded with the wrong protobuf wire type',
    );
    const truncated = toBinary(InputShapesSchema, full).subarray(0, 40);
    expect(sentence(findBinaryProblem(InputShapesSchema, truncated))).toMatch(
      /is not a valid binary protobuf message/,
    );
    expect(sentence(findBinaryProblem(InputShapesSchema, new Uint8Array([0x00])))).toMatch(
      /^the request is not a valid binary protobuf message: illegal tag/,
    );
  });

  it("skips unknown fields, refusing only broken ones", () => {
    const unknown = new BinaryWriter()
      .tag(99, WireType.LengthDelimited)
      .string("x")
      .tag(98, WireType.Varint)
      .int32(1)
      .finish();
    expect(findBinaryProblem(InputShapesSchema, unknown)).toBeUndefined();
    const groups = new BinaryWriter();
    for (let i = 0; i < 200; i++) groups.tag(90, WireType.StartGroup);
    for (let i = 0; i < 200; i++) groups.tag(90, WireType.EndGroup);
    expect(findBinaryProblem(InputShapesSchema, groups.finish())?.reason).toMatch(
      /not a valid binary protobuf message/,
    );
  });
});
