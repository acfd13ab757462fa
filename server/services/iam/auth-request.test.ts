import { describe, expect, it } from "vitest";
import { authRequest } from "./auth-request.js";

const headers = () =>
  new Headers({ authorization: "Bearer token-1", host: "127.0.0.1:8123", "x-tenant": "t" });
const target = { method: "POST", url: "http://127.0.0.1:8123/threads/search?x=1" };

/** What a handler can read of a Request, as plain data. */
function readable(request: Request) {
  const headers: string[] = [];
  request.headers.forEach((value, name) => {
    headers.push(`${name}: ${value}`);
  });
  return {
    method: request.method,
    url: request.url,
    headers,
    body: request.body,
    bodyUsed: request.bodyUsed,
    cache: request.cache,
    credentials: request.credentials,
    destination: request.destination,
    integrity: request.integrity,
    keepalive: request.keepalive,
    mode: request.mode,
    redirect: request.redirect,
    referrer: request.referrer,
    referrerPolicy: request.referrerPolicy,
    aborted: request.signal.aborted,
  };
}

describe("authRequest", () => {
  it("reads as the Fetch Request of the same method, URL and headers, and is one", async () => {
    const request = authRequest(headers(), target);
    expect(request).toBeInstanceOf(Request);
    expect(Object.prototype.toString.call(request)).toBe("[object Request]");
    expect(request.constructor).toBe(Request);
    expect(readable(request)).toEqual(
      readable(new Request(target.url, { method: "POST", headers: headers() })),
    );
    expect(await request.text()).toBe("");
    expect(request.clone().headers.get("authorization")).toBe("Bearer token-1");
    const copy = new Request(request, { method: "PUT" });
    expect([copy.method, copy.url, copy.headers.get("x-tenant")]).toEqual(["PUT", target.url, "t"]);
  });

  it("holds a copy of the headers: a handler changing them changes neither the server's nor a later read", () => {
    const original = headers();
    const request = authRequest(original, target);
    request.headers.set("authorization", "changed");
    expect(original.get("authorization")).toBe("Bearer token-1");
    expect(request.headers.get("authorization")).toBe("changed");
    // Built afterwards, the real Request carries the handler's change too.
    expect(request.clone().headers.get("authorization")).toBe("changed");
  });

  it("keeps what a handler stores on it", () => {
    const request = authRequest(headers(), target) as Request & { note?: string };
    request.note = "seen";
    expect(request.note).toBe("seen");
    expect("note" in request).toBe(true);
  });

  it("answers a target Fetch refuses as a plain GET of the server, as a built Request", () => {
    for (const refused of [
      { method: "CONNECT", url: "http://127.0.0.1:8123/" },
      { method: "GET", url: "http://user:secret@127.0.0.1:8123/" },
      { method: "GET", url: "not a url" },
    ]) {
      const request = authRequest(headers(), refused);
      expect([request.method, request.url, request.headers.get("x-tenant")]).toEqual([
        "GET",
        "http://localhost/",
        "t",
      ]);
    }
  });

  it("reports the URL as Fetch normalises it", () => {
    const request = authRequest(headers(), { method: "GET", url: "http://127.0.0.1:8123/a/../threads/%7e" });
    expect(request.url).toBe(new Request("http://127.0.0.1:8123/a/../threads/%7e").url);
  });
});
