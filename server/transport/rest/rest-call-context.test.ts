import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { connect, constants, createServer as createH2Server, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { TranscodingService } from "../../../test/gen/agentplane/testing/v1/transcoding_service_pb.js";
import type { NodeServerRequest, NodeServerResponse } from "./node-types.js";
import { createRestCallContext, type RestCallContext } from "./rest-call-context.js";

/** How long a test waits for the server side to see what the client did. */
const SETTLE_MS = 2_000;

let server: Server | undefined;
let h2Server: Http2Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
  h2Server?.close();
  h2Server = undefined;
});

/** The request handler of {@link serve} and {@link serveH2}. */
type Handle = (call: RestCallContext, res: NodeServerResponse, req: NodeServerRequest) => void;

/** Node's request listener that builds a REST call context and gives it to `handle`. */
function listener(handle: Handle, shutdownSignal?: AbortSignal) {
  const method = TranscodingService.methods[0]!;
  return (req: NodeServerRequest, res: NodeServerResponse) => {
    const call = createRestCallContext({
      service: TranscodingService,
      method,
      httpMethod: "GET",
      req,
      res,
      shutdownSignal,
    });
    handle(call, res, req);
  };
}

/**
 * A real HTTP server whose handler builds a REST call context and gives it, with the request's
 * response, to `handle`; resolves with the server's base URL.
 */
async function serve(handle: Handle, shutdownSignal?: AbortSignal): Promise<string> {
  server = createServer(listener(handle, shutdownSignal));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** {@link serve} over h2c (HTTP/2 without TLS, as the one-port server serves it). */
async function serveH2(handle: Handle): Promise<string> {
  h2Server = createH2Server(listener(handle));
  h2Server.listen(0, "127.0.0.1");
  await once(h2Server, "listening");
  return `http://127.0.0.1:${(h2Server.address() as AddressInfo).port}`;
}

/** Resolves once `signal` is aborted (at once if it already is). */
function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return once(signal, "abort").then(() => signal.reason);
}

describe("createRestCallContext", () => {
  it("hands the handler the request headers", async () => {
    const seen: [string, string][] = [];
    const base = await serve((call, res) => {
      call.ctx.requestHeader.forEach((value, name) => {
        if (name.startsWith("x-")) seen.push([name, value]);
      });
      res.end();
      call.finish();
    });
    await fetch(base, { headers: { "x-api-key": "k", "x-tenant-id": "t" } });
    expect(seen).toEqual([
      ["x-api-key", "k"],
      ["x-tenant-id", "t"],
    ]);
  });

  it("passes through the response headers a handler sets, except framing and content headers", async () => {
    const base = await serve((call, res) => {
      call.ctx.responseHeader.set("x-pagination-total", "7");
      call.ctx.responseHeader.set("content-length", "999");
      call.ctx.responseHeader.set("connection", "close");
      res.writeHead(200, call.handlerHeaders());
      res.end();
      call.finish();
    });
    const res = await fetch(base);
    expect(res.headers.get("x-pagination-total")).toBe("7");
    expect(res.headers.get("content-length")).not.toBe("999");
    expect(res.headers.get("connection")).not.toBe("close");
  });

  it("aborts the signal when the client goes away, also when it is first read after that", async () => {
    const reasons: Promise<unknown>[] = [];
    const base = await serve((call, res) => {
      // One call reads the signal at once, the other only once the client has gone.
      reasons.push(aborted(call.ctx.signal));
      res.once("close", () => reasons.push(aborted(call.ctx.signal)));
    });
    const client = new AbortController();
    const pending = fetch(base, { signal: client.signal }).catch(() => undefined);
    await expect.poll(() => reasons.length, { timeout: SETTLE_MS }).toBe(1);
    client.abort();
    await pending;
    await expect.poll(() => reasons.length, { timeout: SETTLE_MS }).toBe(2);
    for (const reason of await Promise.all(reasons)) {
      expect(reason).toMatchObject({ name: "AbortError", message: "the client went away" });
    }
  });

  it("aborts the signal when an HTTP/2 client resets the stream", async () => {
    const reasons: Promise<unknown>[] = [];
    const base = await serveH2((call) => {
      reasons.push(aborted(call.ctx.signal));
    });
    const session = connect(base);
    try {
      const stream = session.request({ ":path": "/" });
      stream.on("error", () => undefined);
      await expect.poll(() => reasons.length, { timeout: SETTLE_MS }).toBe(1);
      // Node's compatibility layer reports a reset stream's response as finished (writableFinished),
      // though nothing was answered: only writableEnded tells the client left.
      stream.close(constants.NGHTTP2_CANCEL);
      expect(await reasons[0]).toMatchObject({ name: "AbortError", message: "the client went away" });
    } finally {
      session.close();
    }
  });

  it("does not abort a finished call's signal as a disconnect, and aborts it as completed on finish", async () => {
    let signal: AbortSignal | undefined;
    let abortedBeforeFinish: boolean | undefined;
    const base = await serve((call, res) => {
      signal = call.ctx.signal;
      res.end("done", () => {
        abortedBeforeFinish = signal?.aborted;
        call.finish();
      });
    });
    expect(await (await fetch(base)).text()).toBe("done");
    await expect.poll(() => signal?.aborted, { timeout: SETTLE_MS }).toBe(true);
    expect(abortedBeforeFinish).toBe(false);
    expect(signal?.reason).toMatchObject({ name: "AbortError", message: "the REST call completed" });
  });

  it("aborts the signal with the shutdown's reason when the server shuts down", async () => {
    const shutdown = new AbortController();
    const reasons: Promise<unknown>[] = [];
    const base = await serve((call, res) => {
      reasons.push(aborted(call.ctx.signal));
      void reasons[0]!.then(() => {
        res.end();
        call.finish();
      });
    }, shutdown.signal);
    const answer = fetch(base);
    await expect.poll(() => reasons.length, { timeout: SETTLE_MS }).toBe(1);
    shutdown.abort(new Error("the server is shutting down"));
    await answer;
    expect(await reasons[0]).toEqual(new Error("the server is shutting down"));
  });
});
