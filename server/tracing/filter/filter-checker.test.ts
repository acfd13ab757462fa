import { describe, expect, it } from "vitest";
import { FILTER_FIELDS } from "../../store/filters/filter-fields.js";
import { validateFilter } from "./filter-checker.js";
import { FilterError } from "./filter-error.js";
import { normalizeTimestamp } from "./timestamp-literal.js";

function errorOf(text: string): FilterError {
  try {
    validateFilter(text);
  } catch (error) {
    if (error instanceof FilterError) return error;
    throw error;
  }
  throw new Error(`expected ${text} to be rejected`);
}

const field = (name: string) => FILTER_FIELDS.get(name);

describe("validateFilter: the examples of the reference (§5)", () => {
  it.each([
    `and(eq(run_type, "llm"), gt(latency, 5))`,
    `and(gt(start_time, "2023-07-15T12:34:56Z"), or(neq(error, null), and(eq(feedback_key, "Correctness"), eq(feedback_score, 0.0))))`,
    `and(or(has(tags, "experimental"), has(tags, "beta")), gt(latency, 2))`,
    `and(eq(name, 'ChatOpenAI'), eq(metadata_key, 'conversation_id'), eq(metadata_value, '69b12c91-0000-4000-8000-000000000000'))`,
    `and(eq(is_root, true), eq(feedback_key, "prompt_intent"))`,
    `and(eq(run_type, "llm"), eq(name, "ChatOpenAI"))`,
    `eq(run_type, "llm")`,
    `gt(latency, "5s")`,
    `in(metadata_key, ["session_id","conversation_id","thread_id"])`,
    `and(neq(metadata_key,'x'))`,
    `eq(status, "error")`,
    `and(eq(is_root, true), and(eq(feedback_key, "user_score"), eq(feedback_score, 1)))`,
    `and(eq(feedback_key,"star_rating"), gt(feedback_score, 4))`,
    `search("text")`,
    `has(tags, "beta")`,
  ])("accepts %s", (text) => {
    expect(() => validateFilter(text)).not.toThrow();
  });
});

describe("validateFilter: conversion", () => {
  it("converts latency numbers and durations to seconds", () => {
    expect(validateFilter(`gt(latency, "1.5m")`)).toEqual({
      kind: "compare",
      field: field("latency"),
      operator: "gt",
      value: 90,
    });
    expect(validateFilter(`lt(latency, 200ms)`)).toMatchObject({ value: 0.2 });
    expect(validateFilter(`gte(latency, 2)`)).toMatchObject({ value: 2 });
  });

  it("normalises timestamps to UTC ISO text", () => {
    expect(validateFilter(`gt(start_time, "2023-07-15")`)).toMatchObject({ value: "2023-07-15T00:00:00Z" });
    expect(normalizeTimestamp("2023-07-15 12:34:56.123456+0530")).toBe("2023-07-15T12:34:56.123456+05:30");
    expect(normalizeTimestamp("2023-02-30T00:00:00Z")).toBeUndefined();
    expect(normalizeTimestamp("2023-07-15T24:00:00Z")).toBeUndefined();
    expect(normalizeTimestamp("yesterday")).toBeUndefined();
  });

  it("lowercases UUIDs and keeps null comparisons on nullable fields", () => {
    expect(validateFilter(`eq(trace_id, "0E01BF50-474D-4536-810F-67D3EE7EA3E7")`)).toMatchObject({
      value: "0e01bf50-474d-4536-810f-67d3ee7ea3e7",
    });
    expect(validateFilter(`eq(parent_run_id, null)`)).toMatchObject({ operator: "eq", value: null });
  });

  it("groups key and value comparisons of one and() into one entry condition", () => {
    expect(validateFilter(`and(eq(name, "x"), eq(metadata_key, "k"), neq(metadata_value, "v"))`)).toEqual({
      kind: "and",
      conditions: [
        { kind: "compare", field: field("name"), operator: "eq", value: "x" },
        {
          kind: "entry",
          family: "metadata",
          negated: false,
          conditions: [
            { part: "key", operator: "eq", values: ["k"] },
            { part: "value", operator: "neq", values: ["v"] },
          ],
        },
      ],
    });
  });

  it("keeps key comparisons without a value comparison separate, neq meaning 'no such key'", () => {
    expect(validateFilter(`and(eq(metadata_key, "a"), neq(metadata_key, "b"))`)).toEqual({
      kind: "and",
      conditions: [
        {
          kind: "entry",
          family: "metadata",
          negated: false,
          conditions: [{ part: "key", operator: "eq", values: ["a"] }],
        },
        {
          kind: "entry",
          family: "metadata",
          negated: true,
          conditions: [{ part: "key", operator: "eq", values: ["b"] }],
        },
      ],
    });
  });

  it("does not group across or() and separates families", () => {
    const condition = validateFilter(
      `and(eq(feedback_key, "f"), gt(feedback_score, 0.5), eq(input_key, "q"), eq(input_value, "hi"))`,
    );
    expect(condition).toMatchObject({
      kind: "and",
      conditions: [
        {
          kind: "entry",
          family: "feedback",
          conditions: [{ part: "key" }, { part: "value", operator: "gt", values: [0.5] }],
        },
        { kind: "entry", family: "input", conditions: [{ part: "key" }, { part: "value" }] },
      ],
    });
    expect(validateFilter(`or(eq(metadata_key, "k"), eq(metadata_value, "v"))`)).toMatchObject({
      kind: "or",
      conditions: [
        { kind: "entry", conditions: [{ part: "key" }] },
        { kind: "entry", conditions: [{ part: "value" }] },
      ],
    });
  });

  it("parses has(metadata, json) and search targets", () => {
    expect(validateFilter(`has(metadata, '{"a": 1}')`)).toEqual({ kind: "has-metadata", json: '{"a":1}' });
    expect(validateFilter(`search(error, "boom")`)).toEqual({
      kind: "search",
      fields: ["error"],
      text: "boom",
    });
    expect(validateFilter(`search("boom")`)).toMatchObject({
      fields: ["name", "error", "inputs", "outputs"],
    });
  });
});

describe("validateFilter: errors say where and what was expected", () => {
  it.each([
    [`eq(nme, "x")`, 3, 'unknown field "nme"; expected one of id, trace_id'],
    [`eq(status, "sucess")`, 11, 'expected one of "success", "error", "pending", found "sucess"'],
    [`eq(id, "abc")`, 7, 'expected a quoted UUID, found "abc"'],
    [`gt(name, "a")`, 3, "gt cannot compare name"],
    [`gt(start_time, "last week")`, 15, "expected a quoted ISO 8601 time"],
    [`gt(latency, "soon")`, 12, "a duration such as"],
    [`eq(total_tokens, "5")`, 17, 'expected a number, found "5"'],
    [`eq(is_root, "true")`, 12, "expected true or false"],
    [`eq(name, null)`, 9, "name always has a value"],
    [`gt(end_time, null)`, 13, "expected a quoted ISO 8601 time"],
    [`has(name, "x")`, 4, "has works on tags and metadata"],
    [`eq(tags, "x")`, 3, "tags is matched with has(tags, ...)"],
    [`has(metadata, "k")`, 14, "expected a quoted JSON object"],
    [`search(run_type, "x")`, 7, "search works on name, error, inputs, outputs"],
    [`search("")`, 7, "a non-empty quoted string"],
    [`in(name, [])`, 9, "expected at least one value in the list"],
    [`in(is_root, [true])`, 3, "in cannot be used on is_root"],
    [`gt(metadata_key, "a")`, 17, "gt cannot compare metadata_key"],
    [`gt(metadata_value, "a")`, 19, 'expected a number, found "a"'],
    [`eq(feedback_score, "a")`, 19, 'expected a number, found "a"'],
    [`eq(metadata_key, 1)`, 17, "expected a quoted key name"],
  ])("rejects %s at %i", (text, position, detail) => {
    const error = errorOf(text);
    expect(error.position).toBe(position);
    expect(error.detail).toContain(detail);
  });
});
