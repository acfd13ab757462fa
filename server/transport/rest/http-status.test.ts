import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  httpStatusFromCode,
  malformedRequestError,
  payloadTooLargeError,
  restErrorBody,
  restErrorStatus,
  unsupportedEncodingError,
  writeConnectError,
  writeRestError,
} from "./http-status.js";

describe("httpStatusFromCode", () => {
  it.each<[Code, number]>([
    [Code.Unauthenticated, 401],
    [Code.PermissionDenied, 403],
    [Code.NotFound, 404],
    [Code.AlreadyExists, 409],
    [Code.Aborted, 409],
    [Code.FailedPrecondition, 409],
    [Code.InvalidArgument, 422],
    [Code.OutOfRange, 422],
    [Code.ResourceExhausted, 429],
    [Code.Canceled, 499],
    [Code.Internal, 500],
    [Code.Unknown, 500],
    [Code.DataLoss, 500],
    [Code.Unimplemented, 501],
    [Code.Unavailable, 503],
    [Code.DeadlineExceeded, 504],
  ])("maps code %i to %i", (code, status) => {
    expect(httpStatusFromCode(code)).toBe(status);
    expect(restErrorStatus(new ConnectError("x", code))).toBe(status);
  });
});

describe("request problems", () => {
  it("answers malformed requests 400 while keeping InvalidArgument", () => {
    const error = malformedRequestError("bad JSON");
    expect(error.code).toBe(Code.InvalidArgument);
    expect(restErrorStatus(error)).toBe(400);
  });

  it("answers oversized bodies 413 while keeping ResourceExhausted", () => {
    const error = payloadTooLargeError("too big");
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(restErrorStatus(error)).toBe(413);
  });

  it("answers unsupported encodings 415", () => {
    expect(restErrorStatus(unsupportedEncodingError("br"))).toBe(415);
  });

  it("keeps the tag when a ConnectError is passed through ConnectError.from", () => {
    expect(restErrorStatus(ConnectError.from(malformedRequestError("bad JSON")))).toBe(400);
  });
});

describe("error bodies over HTTP", () => {
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/connect")
        writeConnectError(res, new ConnectError("thread t1 not found", Code.NotFound));
      else writeRestError(res, 405, "method not allowed", { allow: "GET" });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("sends exactly {detail} with the raw message and the mapped status", async () => {
    const res = await fetch(`${base}/connect`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.text()).toBe('{"detail":"thread t1 not found"}');
  });

  it("adds the extra headers", async () => {
    const res = await fetch(`${base}/other`);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
    expect(await res.json()).toEqual({ detail: "method not allowed" });
  });

  it("escapes the detail as JSON", () => {
    expect(restErrorBody('say "hi"\n')).toBe('{"detail":"say \\"hi\\"\\n"}');
  });
});
