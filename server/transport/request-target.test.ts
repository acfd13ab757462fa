import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { checkRequestTarget } from "./request-target.js";

/** What the check reads and rewrites of a request: its target. */
function request(url: string): { url: string } {
  return { url };
}

function check(url: string): [string | undefined, string] {
  const req = request(url);
  const problem = checkRequestTarget(req as IncomingMessage);
  return [problem, req.url];
}

describe("checkRequestTarget", () => {
  it("leaves paths alone, escapes and queries included", () => {
    expect(check("/ok")).toEqual([undefined, "/ok"]);
    expect(check("/threads/a%20b?x=%2F&y=1")).toEqual([undefined, "/threads/a%20b?x=%2F&y=1"]);
  });

  it("reduces a valid absolute-form target to its path and query, as sent", () => {
    expect(check("http://127.0.0.1:2024/api/v1/whoami?x=1")).toEqual([undefined, "/api/v1/whoami?x=1"]);
    expect(check("HTTPS://example.com")).toEqual([undefined, "/"]);
    expect(check("http://example.com?q=1")).toEqual([undefined, "/?q=1"]);
    expect(check("http://example.com/a#frag")).toEqual([undefined, "/a"]);
  });

  it("refuses what is not a path, and never throws", () => {
    for (const target of [
      "http://[bad/ok",
      "http://127.0.0.1:99999/ok",
      "*",
      "ok",
      "127.0.0.1:1",
      "",
      "ftp://x/y",
    ]) {
      const [problem] = check(target);
      expect(problem).toMatch(/is not a path such as \/ok/);
    }
  });

  it("refuses a % that does not start an escape, wherever it is", () => {
    expect(check("/%ZZ")[0]).toBe(
      'the request target "/%ZZ" has a % that does not start an escape such as %20',
    );
    expect(check("/ok?a=%")[0]).toMatch(/has a % that does not start an escape/);
    expect(check("http://h/x%G0")[0]).toMatch(/has a % that does not start an escape/);
  });
});
