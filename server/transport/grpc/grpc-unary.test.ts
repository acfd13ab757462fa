/**
 * The unary gRPC fast path answers exactly as connect-es does. Two h2c servers serve the same test
 * implementations through createConnectAdapter, one with the fast path and one without (connect-es
 * itself); every case, well-formed or not, goes to both over raw HTTP/2 and their status, headers,
 * body and trailers must be equal. Then what only a live call shows: deadlines, cancellation, and
 * the connect-node gRPC client with gzip both ways.
 */
import { once } from "node:events";
import { connect, constants, createServer, type Http2Server, type IncomingHttpHeaders } from "node:http2";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type HandlerContext } from "@connectrpc/connect";
import { compressionGzip, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdentityService, WhoamiResponseSchema } from "../../../gen/agentplane/iam/v1/identity_service_pb.js";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../../gen/grpc/health/v1/health_pb.js";
import { createConnectAdapter } from "../connect-adapter.js";

/** Small enough that a test message can exceed it; the production limit is 32 MiB. */
const READ_MAX_BYTES = 1024;
/** Far above any test body, so that readMaxBytes is the limit a large message meets. */
const BODY_MAX_BYTES = 64 * 1024;
/** Characters of the large answer: above connect-es's 1 KiB compressMinBytes, so it is compressed. */
const LARGE_ANSWER_CHARS = 5000;
/** Generous for a loaded machine: only a hung call reaches it. */
const CALL_TIMEOUT_MS = 10_000;

/** What the "cancel" and "deadline" implementations saw on ctx.signal, by server. */
const seen = new Map<string, { reason?: unknown; timeoutMs?: number }>();

function healthImpl(server: string) {
  return {
    async check(request: { service: string }, ctx: HandlerContext) {
      switch (request.service) {
        case "details":
          throw new ConnectError("refused, with details", Code.FailedPrecondition, { "x-why": "a test" }, [
            { desc: HealthCheckResponseSchema, value: { status: ServingStatus.NOT_SERVING } },
          ]);
        case "crash":
          throw new Error("a bug, never shown");
        case "headers":
          ctx.responseHeader.set("x-header", "h");
          ctx.responseTrailer.set("x-trailer", "t");
          return { status: ServingStatus.SERVING };
        case "deadline":
        case "cancel": {
          seen.set(`${server}/${request.service}`, { timeoutMs: ctx.timeoutMs() });
          const reason = await new Promise((resolve) =>
            ctx.signal.addEventListener("abort", () => resolve(ctx.signal.reason), { once: true }),
          );
          seen.set(`${server}/${request.service}`, { reason, timeoutMs: ctx.timeoutMs() });
          throw reason;
        }
        default:
          return { status: ServingStatus.SERVING };
      }
    },
  };
}

const identityImpl = {
  whoami: (_request: unknown, ctx: HandlerContext) => ({
    organization: { id: ctx.requestHeader.get("x-org") ?? "", displayName: "n".repeat(LARGE_ANSWER_CHARS) },
  }),
};

async function startServer(fast: boolean): Promise<Http2Server> {
  const name = fast ? "fast" : "reference";
  const handler = createConnectAdapter({
    services: [
      { service: Health, impl: healthImpl(name) },
      { service: IdentityService, impl: identityImpl },
    ],
    routes: () => {},
    grpcUnaryFastPath: fast,
    readMaxBytes: READ_MAX_BYTES,
    bodyMaxBytes: BODY_MAX_BYTES,
    fallback: (_req, res) => {
      res.writeHead(404);
      res.end();
    },
    onError: (error) => {
      throw error;
    },
  });
  const server = createServer(handler);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return server;
}

/** An answer as the wire carried it. */
interface RawAnswer {
  headers: IncomingHttpHeaders;
  trailers: IncomingHttpHeaders;
  body: Buffer;
}

function rawCall(
  server: Http2Server,
  path: string,
  body: Uint8Array,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  const { port } = server.address() as AddressInfo;
  const session = connect(`http://127.0.0.1:${port}`);
  return new Promise<RawAnswer>((resolve, reject) => {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...headers,
    });
    const answer: RawAnswer = { headers: {}, trailers: {}, body: Buffer.alloc(0) };
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      answer.headers = h;
    });
    stream.on("trailers", (t) => {
      answer.trailers = t;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve({ ...answer, body: Buffer.concat(chunks) }));
    stream.on("error", reject);
    stream.end(body);
  }).finally(() => session.close());
}

/** A message in a gRPC envelope. */
function envelope(message: Uint8Array, flags = 0): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out[0] = flags;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

const check = (service: string) =>
  toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service }));
const CHECK = "/grpc.health.v1.Health/Check";
const WHOAMI = "/agentplane.iam.v1.IdentityService/Whoami";

/** The parts of an answer both paths must agree on (the date differs by design). */
function comparable(answer: RawAnswer) {
  const { date: _date, ...headers } = answer.headers;
  return { headers, trailers: answer.trailers, body: answer.body.toString("hex") };
}

let fast: Http2Server;
let reference: Http2Server;
beforeAll(async () => {
  [fast, reference] = await Promise.all([startServer(true), startServer(false)]);
});
afterAll(() => {
  fast?.close();
  reference?.close();
});

const CASES: [string, string, Uint8Array, Record<string, string>?][] = [
  ["a well-formed call", CHECK, envelope(check(""))],
  ["application/grpc+proto", CHECK, envelope(check("")), { "content-type": "application/grpc+proto" }],
  ["response headers and trailers the implementation set", CHECK, envelope(check("headers"))],
  ["an error with details and metadata", CHECK, envelope(check("details"))],
  ["an error that is not a ConnectError", CHECK, envelope(check("crash"))],
  ["a truncated envelope", CHECK, envelope(check("x")).subarray(0, 7)],
  ["a truncated prefix", CHECK, Buffer.from([0, 0, 0])],
  ["an empty body", CHECK, new Uint8Array(0)],
  ["two messages", CHECK, Buffer.concat([envelope(check("")), envelope(check(""))])],
  ["a compressed message without grpc-encoding", CHECK, envelope(gzipSync(check("")), 1)],
  ["an unsupported grpc-encoding", CHECK, envelope(check("")), { "grpc-encoding": "snappy" }],
  ["bytes that are no protobuf message", CHECK, envelope(Buffer.from([0x0a, 0xff, 0xff, 0xff]))],
  ["a message over readMaxBytes", CHECK, envelope(check("x".repeat(READ_MAX_BYTES * 2)))],
  [
    "a gzip message that inflates over readMaxBytes",
    CHECK,
    envelope(gzipSync(check("x".repeat(READ_MAX_BYTES * 2))), 1),
    { "grpc-encoding": "gzip" },
  ],
  ["a NUL in a string (the input screen)", CHECK, envelope(check("a\u0000b"))],
  ["an invalid grpc-timeout", CHECK, envelope(check("")), { "grpc-timeout": "soon" }],
  ["a gzip request", CHECK, envelope(gzipSync(check("gz")), 1), { "grpc-encoding": "gzip" }],
  [
    "a large answer to a client that accepts gzip",
    WHOAMI,
    envelope(new Uint8Array(0)),
    { "grpc-accept-encoding": "gzip", "x-org": "o1" },
  ],
  ["a large answer to a client that accepts none", WHOAMI, envelope(new Uint8Array(0)), { "x-org": "o2" }],
  ["an unknown method", "/grpc.health.v1.Health/Nope", envelope(check(""))],
];

describe("the unary gRPC fast path answers as connect-es does", () => {
  it.each(CASES)("%s", async (_name, path, body, headers) => {
    const [ours, theirs] = await Promise.all([
      rawCall(fast, path, body, headers),
      rawCall(reference, path, body, headers),
    ]);
    expect(comparable(ours)).toEqual(comparable(theirs));
  });

  it("sends the status, message and details a gRPC client decodes", async () => {
    const answer = await rawCall(fast, CHECK, envelope(check("details")));
    expect(answer.headers[":status"]).toBe(200);
    expect(answer.trailers["grpc-status"]).toBe(String(Code.FailedPrecondition));
    expect(decodeURIComponent(String(answer.trailers["grpc-message"]))).toBe("refused, with details");
    expect(answer.trailers["grpc-status-details-bin"]).toBeTruthy();
    expect(answer.trailers["x-why"]).toBe("a test");
    const client = createClient(Health, createGrpcTransport({ baseUrl: baseUrlOf(fast) }));
    const error = await client.check({ service: "details" }).catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((error as ConnectError).findDetails(HealthCheckResponseSchema)).toEqual([
      expect.objectContaining({ status: ServingStatus.NOT_SERVING }),
    ]);
  });

  it("compresses a large answer with gzip, and the connect-node client reads it", async () => {
    const answer = await rawCall(fast, WHOAMI, envelope(new Uint8Array(0)), {
      "grpc-accept-encoding": "gzip",
    });
    expect(answer.headers["grpc-encoding"]).toBe("gzip");
    expect(answer.body[0]).toBe(1);
    const client = createClient(
      IdentityService,
      createGrpcTransport({
        baseUrl: baseUrlOf(fast),
        sendCompression: compressionGzip,
        compressMinBytes: 1,
      }),
    );
    const me = await client.whoami({}, { headers: { "x-org": "o3" } });
    expect(me.organization?.id).toBe("o3");
    expect(me.organization?.displayName).toHaveLength(LARGE_ANSWER_CHARS);
    expect(toBinary(WhoamiResponseSchema, me).length).toBeGreaterThan(LARGE_ANSWER_CHARS);
  });
});

describe("the unary gRPC fast path and a client that leaves", () => {
  it("drops a call whose stream is reset halfway through its body, and keeps serving", async () => {
    const { port } = fast.address() as AddressInfo;
    const session = connect(`http://127.0.0.1:${port}`);
    const stream = session.request({ ":method": "POST", ":path": CHECK, "content-type": "application/grpc" });
    stream.on("error", () => {});
    const whole = envelope(check("x".repeat(100)));
    // HTTP/2 keeps a stream's frames in order: the server has the first bytes before the reset.
    stream.write(whole.subarray(0, 20));
    stream.close(constants.NGHTTP2_CANCEL);
    await once(stream, "close");
    session.close();
    // The test server's onError throws: an attempt to answer the reset stream would fail this file.
    const answer = await rawCall(fast, CHECK, envelope(check("")));
    expect(answer.trailers["grpc-status"]).toBe("0");
  });
});

describe("the unary gRPC fast path's signal", () => {
  it.each([
    ["fast", () => fast],
    ["reference", () => reference],
  ])("%s: aborts with DEADLINE_EXCEEDED when grpc-timeout passes", async (name, server) => {
    // A raw client, which waits for the server's answer: connect-node would cancel at its own deadline.
    const answer = await rawCall(server(), CHECK, envelope(check("deadline")), { "grpc-timeout": "300m" });
    expect(answer.trailers["grpc-status"]).toBe(String(Code.DeadlineExceeded));
    const observed = seen.get(`${name}/deadline`);
    expect(ConnectError.from(observed?.reason).code).toBe(Code.DeadlineExceeded);
    expect(observed?.timeoutMs).toBeLessThanOrEqual(0);
  });

  it.each([
    ["fast", () => fast],
    ["reference", () => reference],
  ])("%s: aborts with CANCELED when the client cancels", async (name, server) => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: baseUrlOf(server()) }));
    const controller = new AbortController();
    const call = client.check({ service: "cancel" }, { signal: controller.signal }).catch((e: unknown) => e);
    await expect.poll(() => seen.has(`${name}/cancel`), { timeout: CALL_TIMEOUT_MS }).toBe(true);
    expect(seen.get(`${name}/cancel`)?.timeoutMs).toBeUndefined();
    controller.abort();
    expect(ConnectError.from(await call).code).toBe(Code.Canceled);
    await expect.poll(() => seen.get(`${name}/cancel`)?.reason, { timeout: CALL_TIMEOUT_MS }).toBeDefined();
    expect(ConnectError.from(seen.get(`${name}/cancel`)?.reason).code).toBe(Code.Canceled);
  });
});

function baseUrlOf(server: Http2Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
