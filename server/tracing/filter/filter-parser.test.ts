import { describe, expect, it } from "vitest";
import { FilterError } from "./filter-error.js";
import { tokenize } from "./filter-lexer.js";
import { parseFilter } from "./filter-parser.js";

/** The FilterError `run` throws. */
function errorOf(run: () => unknown): FilterError {
  try {
    run();
  } catch (error) {
    if (error instanceof FilterError) return error;
    throw error;
  }
  throw new Error("expected a FilterError");
}

describe("tokenize", () => {
  it("gives every token its kind, text, value and position", () => {
    const tokens = tokenize(`in(tags, ["a", 'b\\'c'], -1.5, 5s, 1.5m, 200ms, true, null)`);
    expect(tokens.map((t) => [t.kind, t.position, t.value])).toEqual([
      ["identifier", 0, undefined],
      ["(", 2, undefined],
      ["identifier", 3, undefined],
      [",", 7, undefined],
      ["[", 9, undefined],
      ["string", 10, "a"],
      [",", 13, undefined],
      ["string", 15, "b'c"],
      ["]", 21, undefined],
      [",", 22, undefined],
      ["number", 24, -1.5],
      [",", 28, undefined],
      ["duration", 30, 5],
      [",", 32, undefined],
      ["duration", 34, 90],
      [",", 38, undefined],
      ["duration", 40, 0.2],
      [",", 45, undefined],
      ["true", 47, undefined],
      [",", 51, undefined],
      ["null", 53, undefined],
      [")", 57, undefined],
      ["end", 58, undefined],
    ]);
  });

  it("decodes escapes in double- and single-quoted strings", () => {
    expect(tokenize(String.raw`"a\"b\\c\n\u00e9" 'x\'y'`).map((t) => t.value)).toEqual([
      'a"b\\c\né',
      "x'y",
      undefined,
    ]);
  });

  it("rejects an unterminated string at its opening quote", () => {
    const error = errorOf(() => tokenize(`eq(name, "abc)`));
    expect(error.position).toBe(9);
    expect(error.message).toBe('invalid filter at position 9: unterminated string; expected a closing "');
  });

  it("rejects stray characters and unknown duration units", () => {
    expect(errorOf(() => tokenize("eq(name; 1)")).position).toBe(7);
    const unit = errorOf(() => tokenize("gt(latency, 5x)"));
    expect(unit.position).toBe(13);
    expect(unit.detail).toContain('unknown duration unit "x"');
  });
});

describe("parseFilter", () => {
  it("builds a typed tree with positions", () => {
    expect(parseFilter(`and(eq(run_type, "llm"), gt(latency, 5))`)).toEqual({
      kind: "and",
      position: 0,
      operands: [
        {
          kind: "comparison",
          operator: "eq",
          position: 4,
          field: { name: "run_type", position: 7 },
          value: { kind: "string", value: "llm", position: 17 },
        },
        {
          kind: "comparison",
          operator: "gt",
          position: 25,
          field: { name: "latency", position: 28 },
          value: { kind: "number", value: 5, position: 37 },
        },
      ],
    });
  });

  it("parses in, has, search with and without a field, not, or and every literal", () => {
    const tree = parseFilter(
      `or(in(run_type, ["llm", "chain"]), has(tags, "x"), search("foo"), search(name, 'bar'), not(eq(error, null)), eq(is_root, false), lt(latency, 1.5m))`,
    );
    if (tree.kind !== "or") throw new Error("expected or");
    expect(tree.operands.map((o) => o.kind)).toEqual([
      "in",
      "has",
      "search",
      "search",
      "not",
      "comparison",
      "comparison",
    ]);
    const [inNode, , searchAll, searchName] = tree.operands;
    expect(inNode).toMatchObject({ values: [{ value: "llm" }, { value: "chain" }], listPosition: 16 });
    expect(searchAll).toMatchObject({ field: undefined, value: { value: "foo" } });
    expect(searchName).toMatchObject({ field: { name: "name" }, value: { value: "bar" } });
    expect(tree.operands[5]).toMatchObject({ value: { kind: "boolean", value: false } });
    expect(tree.operands[6]).toMatchObject({ value: { kind: "duration", value: 90 } });
  });

  it("accepts one-argument and(...) and any whitespace", () => {
    expect(parseFilter(" and(\n\tneq(metadata_key,'x') ) ")).toMatchObject({
      kind: "and",
      operands: [{ operator: "neq" }],
    });
  });

  it.each([
    [`eq(name, "x"`, 12, 'expected ")", found the end of the filter'],
    [`eq(name "x")`, 8, 'expected ",", found "\\"x\\""'],
    [`eq(name, "x"))`, 13, 'expected the end of the filter, found ")"'],
    [`equals(name, "x")`, 0, 'unknown function "equals"'],
    [`eq("name", "x")`, 3, "expected a field name"],
    [`eq(name, run_type)`, 9, "expected a value"],
    [`and()`, 4, "expected a function"],
    [`and(eq(name, "x") eq(name, "y"))`, 18, 'expected "," or ")"'],
    [`in(name, "x")`, 9, "expected a list"],
    [`in(name, ["x" "y"])`, 14, 'expected "," or "]"'],
    [`not(eq(name, "x"), eq(name, "y"))`, 17, 'expected ")"'],
    [`name`, 0, 'unknown function "name"'],
    [`eq`, 2, 'expected "("'],
    [`"x"`, 0, "expected a function"],
    [``, 0, "expected a function"],
  ])("rejects %s at position %i", (text, position, detail) => {
    const error = errorOf(() => parseFilter(text));
    expect(error.position).toBe(position);
    expect(error.detail).toContain(detail);
    expect(error.message).toBe(`invalid filter at position ${position}: ${error.detail}`);
  });
});
