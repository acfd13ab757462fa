import type { JsonValue } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { InputShapesSchema } from "../../../test/gen/agentplane/testing/v1/input_shapes_pb.js";
import { diagnoseMessage, echo } from "./json-diagnosis.js";

/** `{"child": {"child": ... {"text": 5}}}`: a wrong-typed leaf under `levels` messages. */
function childChain(levels: number): JsonValue {
  let value: JsonValue = { text: 5 };
  for (let i = 0; i < levels; i++) value = { child: value };
  return value;
}

describe("diagnoseMessage", () => {
  it("names the field protobuf-es refused, through nested messages", () => {
    expect(diagnoseMessage(InputShapesSchema, childChain(2), {})).toEqual({
      path: "child.child.text",
      message: "must be a string, got 5",
    });
  });

  it("gives up past the nesting limit instead of exhausting the stack", () => {
    expect(() => diagnoseMessage(InputShapesSchema, childChain(20_000), {})).not.toThrow();
    expect(diagnoseMessage(InputShapesSchema, childChain(20_000), {})).toBeUndefined();
  });
});

describe("echo", () => {
  it("shortens long values and names what JSON.stringify cannot render", () => {
    expect(echo("x".repeat(100))).toBe(`"${"x".repeat(59)}…`);
    let deep: JsonValue = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(echo(deep)).toBe("an array");
  });
});
