import { describe, expect, it } from "vitest";
import { compareSpecificity, decodeVariable, parsePathTemplate, splitPath } from "./path-template.js";

function match(template: string, path: string): string[] | undefined {
  return parsePathTemplate(template).match(splitPath(path)!);
}

describe("parsePathTemplate", () => {
  it("compiles literals, variables, wildcards and a verb", () => {
    const t = parsePathTemplate("/v1/{name=shelves/*/books/**}:publish");
    expect(t.verb).toBe("publish");
    expect(t.variables).toEqual([{ fieldPath: "name", multiSegment: true, start: 1, end: undefined }]);
    expect(t.literalCount).toBe(4); // v1, shelves, books and the verb
    expect(t.wildcardCount).toBe(2);
    expect(t.hasDoubleWildcard).toBe(true);
    expect(t.shape).toBe("/v1/shelves/*/books/**:publish");
  });

  it("treats {id} and {id=*} as single-segment variables with one shape", () => {
    const a = parsePathTemplate("/v1/items/{id}");
    const b = parsePathTemplate("/v1/items/{item_id=*}");
    expect(a.variables[0]).toEqual({ fieldPath: "id", multiSegment: false, start: 2, end: 3 });
    expect(b.variables[0]!.multiSegment).toBe(false);
    expect(a.shape).toBe(b.shape);
  });

  it.each([
    ["v1/items", "must start with /"],
    ["/v1/**/items", "** must be the last segment"],
    ["/v1/{a={b}}", "cannot nest"],
    ["/v1/{a}/{a}", "appears twice"],
    ["/v1/{1a}", "is not a field path"],
    ["/v1//items", "is not a valid segment"],
    ["/v1/{id", "unterminated"],
    ["/v1/id}", "unbalanced"],
  ])("rejects %s", (template, why) => {
    expect(() => parsePathTemplate(template)).toThrow(why);
  });
});

describe("match", () => {
  it("captures raw single-segment variables", () => {
    expect(match("/v1/shelves/{shelf}/items/{id}", "/v1/shelves/s1/items/a%2Fb")).toEqual(["s1", "a%2Fb"]);
  });

  it("keeps / inside a multi-segment capture", () => {
    expect(match("/v1/{name=shelves/*/books/**}", "/v1/shelves/s1/books/a/b/c")).toEqual([
      "shelves/s1/books/a/b/c",
    ]);
  });

  it("lets ** match zero segments", () => {
    expect(match("/v1/{path=**}", "/v1")).toEqual([""]);
    expect(match("/files/**", "/files/a/b")).toEqual([]);
  });

  it("requires the verb and strips it from the last segment", () => {
    expect(match("/v1/items/{id}:archive", "/v1/items/abc:archive")).toEqual(["abc"]);
    expect(match("/v1/items/{id}:archive", "/v1/items/abc")).toBeUndefined();
    expect(match("/v1/items:count", "/v1/items:count")).toEqual([]);
    expect(match("/v1/items", "/v1/items:count")).toBeUndefined();
  });

  it("keeps a colon in a variable of a template without a verb", () => {
    expect(match("/v1/items/{id}", "/v1/items/urn:x:1")).toEqual(["urn:x:1"]);
  });

  it("rejects other segment counts, other literals and empty segments", () => {
    expect(match("/v1/items/{id}", "/v1/items")).toBeUndefined();
    expect(match("/v1/items/{id}", "/v1/items/a/b")).toBeUndefined();
    expect(match("/v1/items/{id}", "/v2/items/a")).toBeUndefined();
    expect(match("/v1/items/{id}", "/v1/items/")).toBeUndefined();
    expect(match("/v1/{p=**}", "/v1/a//b")).toBeUndefined();
  });
});

describe("splitPath", () => {
  it("splits raw segments and refuses paths without a leading slash", () => {
    expect(splitPath("/a/b%2Fc")).toEqual(["a", "b%2Fc"]);
    expect(splitPath("/")).toEqual([]);
    expect(splitPath("*")).toBeUndefined();
  });
});

describe("decodeVariable", () => {
  it("fully decodes a single-segment value", () => {
    expect(decodeVariable("a%2Fb%20c", false)).toBe("a/b c");
  });

  it("decodes a multi-segment value but leaves %2F encoded", () => {
    expect(decodeVariable("shelves/a%20b/books/c%2fd", true)).toBe("shelves/a b/books/c%2fd");
  });

  it("reports malformed escapes", () => {
    expect(decodeVariable("%E0%A4%A", false)).toBeUndefined();
    expect(decodeVariable("a/%zz", true)).toBeUndefined();
  });
});

describe("compareSpecificity", () => {
  it("orders more literals first, then fewer wildcards, ** counting as the most", () => {
    const templates = [
      "/v1/{name=**}",
      "/v1/{a}/{b}",
      "/v1/items/{id}",
      "/v1/items/search",
      "/v1/items/{id}:archive",
      "/v1/*/**",
      "/v1/{a}/*",
    ].map(parsePathTemplate);
    const sorted = [...templates].sort(compareSpecificity).map((t) => t.text);
    expect(sorted).toEqual([
      "/v1/items/search",
      "/v1/items/{id}:archive",
      "/v1/items/{id}",
      "/v1/{a}/{b}",
      "/v1/{a}/*",
      "/v1/{name=**}",
      "/v1/*/**",
    ]);
  });
});
