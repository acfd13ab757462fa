import { describe, expect, it } from "vitest";
import {
  MAX_FILTER_CONDITIONS,
  parseStoreFilter,
  StoreInputError,
  validateInteger,
  validateKey,
  validateNamespace,
  validateTtl,
} from "./store-validation.js";

describe("validateNamespace", () => {
  it("accepts labels without periods, and * in patterns", () => {
    expect(validateNamespace(["users", "u1"], "namespace", "item")).toEqual(["users", "u1"]);
    expect(validateNamespace([], "prefix", "pattern")).toEqual([]);
    expect(validateNamespace(["*", "x"], "prefix", "pattern")).toEqual(["*", "x"]);
  });

  it("names the label and the rule it breaks", () => {
    expect(() => validateNamespace([], "namespace", "item")).toThrow(
      "namespace must have at least one label",
    );
    expect(() => validateNamespace(["a", ""], "prefix", "pattern")).toThrow(
      new StoreInputError("prefix label 2 is empty; namespace labels must be non-empty"),
    );
    expect(() => validateNamespace(["a.b"], "namespace", "item")).toThrow('label 1 ("a.b") contains "."');
    expect(() => validateNamespace(["a\u0000"], "namespace", "item")).toThrow("NUL");
    expect(() => validateNamespace([1], "namespace", "item")).toThrow("label 1 must be a string");
    expect(() => validateNamespace(Array(33).fill("a"), "namespace", "item")).toThrow("at most 32");
    expect(() => validateNamespace(["x".repeat(1025)], "namespace", "item")).toThrow("1024 bytes");
  });
});

describe("validateKey, validateTtl and validateInteger", () => {
  it("accept good values and refuse bad ones", () => {
    expect(validateKey("k")).toBe("k");
    expect(() => validateKey("")).toThrow("key must not be empty");
    // 171 three-byte characters are 513 bytes.
    expect(() => validateKey("€".repeat(171))).toThrow("512 bytes");
    expect(validateTtl(0.5, "ttl")).toBe(0.5);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e12])
      expect(() => validateTtl(bad, "ttl")).toThrow("ttl must be a positive number of minutes");
    expect(validateInteger(5, "limit", 1, 10)).toBe(5);
    expect(() => validateInteger(1.5, "limit", 1, 10)).toThrow(
      "limit must be an integer from 1 to 10; got 1.5",
    );
  });
});

describe("parseStoreFilter", () => {
  it("reads plain values as JSON equality and $ objects as operators", () => {
    expect(parseStoreFilter(undefined)).toEqual([]);
    expect(parseStoreFilter({ a: 1, b: { c: 2 }, d: null, e: { $gt: 3, $lte: 9 } })).toEqual([
      { field: "a", operator: "$eq", operand: 1 },
      { field: "b", operator: "$eq", operand: { c: 2 } },
      { field: "d", operator: "$eq", operand: null },
      { field: "e", operator: "$gt", operand: 3 },
      { field: "e", operator: "$lte", operand: 9 },
    ]);
    // An object that is not all operators is a value to compare.
    expect(parseStoreFilter({ a: { $gt: 1, x: 2 } })).toEqual([
      { field: "a", operator: "$eq", operand: { $gt: 1, x: 2 } },
    ]);
  });

  it("refuses unknown operators, wrong operands and oversized filters", () => {
    expect(() => parseStoreFilter({ a: { $exists: true } })).toThrow(
      'filter field "a": unknown operator $exists',
    );
    expect(() => parseStoreFilter({ a: { $lt: null } })).toThrow("$lt needs a number, a string or a boolean");
    expect(() => parseStoreFilter({ a: { $nin: "x" } })).toThrow("$nin needs an array");
    const big = Object.fromEntries(Array.from({ length: MAX_FILTER_CONDITIONS + 1 }, (_, i) => [`f${i}`, i]));
    expect(() => parseStoreFilter(big)).toThrow(`at most ${MAX_FILTER_CONDITIONS}`);
  });
});
