import type { ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { restErrorStatus } from "./http-status.js";
import { parseQuery } from "./query-string.js";

function refusal(query: string): [number, string] {
  try {
    parseQuery(query);
  } catch (error) {
    return [restErrorStatus(error as ConnectError), (error as ConnectError).rawMessage];
  }
  throw new Error(`parseQuery(${JSON.stringify(query)}) succeeded`);
}

describe("parseQuery", () => {
  it("decodes names and values, + as a space, and keeps repeated names in order", () => {
    expect(parseQuery("")).toEqual([]);
    expect(parseQuery("a=1&b=x+y&a=%C3%A9&flag&&c=")).toEqual([
      ["a", "1"],
      ["b", "x y"],
      ["a", "é"],
      ["flag", ""],
      ["c", ""],
    ]);
  });

  it("answers 400 to a bad escape or one that is not UTF-8, lone surrogates included", () => {
    for (const query of ["a=%ZZ", "a=%", "%E0%A4%A=1", "a=%ED%A0%80", "a=%FF"]) {
      expect(refusal(query)).toEqual([400, expect.stringMatching(/is not validly percent-encoded/)]);
    }
  });

  it("answers 422 to NUL in a name or a value, naming the parameter", () => {
    expect(refusal("limit=1%002")).toEqual([
      422,
      'query parameter "limit" contains the NUL character (\\u0000), which cannot be stored',
    ]);
    expect(refusal("a%00=1")[0]).toBe(422);
  });
});
