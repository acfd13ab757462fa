/**
 * Bodies over the 32 MiB limit, sent by real clients the way a slow or hostile client sends them: a
 * large body trickled in chunks, and a Content-Length that announces more than the limit. Every
 * route family (REST JSON, multipart ingest, Connect and gRPC, a REST-only adapter) must answer 413
 * (RESOURCE_EXHAUSTED on Connect and gRPC) promptly, the client must read that answer rather than a
 * reset, and the server must then stop reading: the connection is closed (or the HTTP/2 stream
 * reset with NO_ERROR) within a bound, instead of draining the body forever.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CreateThreadRequestSchema,
  ThreadService,
} from "../../gen/agentplane/agents/v1/thread_service_pb.js";
import { maxRequestBodyBytes } from "../../server/transport/body/body-limit.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});

afterAll(async () => {
  await t?.stop();
});

/** Chunk a slow client sends; 32 chunks cross the limit. */
const CHUNK_BYTES = 1024 * 1024;
/** Pause between chunks: the body takes about half a second to cross the limit, in 33 writes. */
const CHUNK_PAUSE_MS = 10;
/** How late after crossing the limit the answer may come: "promptly". */
const PROMPT_MS = 1_000;
/** How long the server may read on after answering before it half-closes: its drain budget, with margin. */
const DRAIN_WITHIN_MS = 1_500;
/** How long the server may keep the connection after answering: drain budget plus lingering close. */
const CLOSE_WITHIN_MS = 5_000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface SlowUpload {
  status: number;
  detail: string;
  /** Milliseconds from the moment the client had sent more than the limit to the answer's headers. */
  answeredAfterLimitMs: number;
  /** Milliseconds from the answer to the server ending its side of the connection (FIN). */
  endedAfterAnswerMs: number;
  /** Milliseconds from the answer to the connection being closed. */
  closedAfterAnswerMs: number;
}

/**
 * The same over a raw socket that never stops sending on its own and never closes: only the server
 * can end this connection. Chunked framing, like a client streaming an upload of unknown size.
 */
function rawSlowUpload(path: string, contentType: string): Promise<SlowUpload & { reset: boolean }> {
  const url = new URL(t.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let sent = 0;
    let crossedAt = 0;
    let answeredAt = 0;
    let endedAt = 0;
    let received = "";
    let resetBeforeAnswer = false;
    socket.setEncoding("latin1");
    socket.on("data", (text: string) => {
      received += text;
      if (answeredAt === 0 && received.includes("\r\n\r\n")) answeredAt = performance.now();
    });
    socket.on("end", () => {
      endedAt = performance.now();
    });
    socket.on("error", () => {
      if (answeredAt === 0) resetBeforeAnswer = true;
    });
    socket.on("close", () => {
      const [head = "", body = ""] = received.split("\r\n\r\n");
      // The body may be chunked: its JSON is the one object in it.
      const json = /\{.*\}/.exec(body)?.[0] ?? "{}";
      if (answeredAt === 0) {
        reject(new Error(`the connection closed after ${sent} bytes without an answer`));
        return;
      }
      resolve({
        status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]),
        detail: (JSON.parse(json) as { detail: string }).detail,
        answeredAfterLimitMs: answeredAt - crossedAt,
        endedAfterAnswerMs: endedAt - answeredAt,
        closedAfterAnswerMs: performance.now() - answeredAt,
        reset: resetBeforeAnswer,
      });
    });
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nx-api-key: ${t.adminKey}\r\n` +
        `Content-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n[\r\n`,
    );
    sent = 1;
    const chunk = Buffer.concat([
      Buffer.from(`${CHUNK_BYTES.toString(16)}\r\n`),
      Buffer.alloc(CHUNK_BYTES, 0x20),
      Buffer.from("\r\n"),
    ]);
    void (async () => {
      while (!socket.destroyed && socket.writable) {
        sent += CHUNK_BYTES;
        if (crossedAt === 0 && sent > maxRequestBodyBytes) crossedAt = performance.now();
        if (!socket.write(chunk))
          await new Promise((resolve) => socket.once("drain", resolve).once("close", resolve));
        await pause(CHUNK_PAUSE_MS);
      }
    })();
  });
}

/**
 * POSTs an endless JSON-ish body over HTTP/1.1 in chunks, until the server closes the connection; on
 * a connection the client asks to keep alive, or one it asks to close after this request.
 */
function slowHttp1Upload(
  path: string,
  headers: Record<string, string>,
  connection: "keep-alive" | "close",
): Promise<SlowUpload> {
  const url = new URL(path, t.baseUrl);
  return new Promise((resolve, reject) => {
    let sent = 0;
    let crossedAt = 0;
    let answeredAt = 0;
    let endedAt = 0;
    let status = 0;
    let body = "";
    const agent = new http.Agent({ keepAlive: connection === "keep-alive", maxSockets: 1 });
    const req = http.request(url, {
      method: "POST",
      agent,
      headers: { "x-api-key": t.adminKey, "transfer-encoding": "chunked", connection, ...headers },
    });
    req.on("response", (res) => {
      answeredAt = performance.now();
      status = res.statusCode ?? 0;
      res.setEncoding("utf8");
      res.on("data", (text: string) => {
        body += text;
      });
    });
    // The request itself "closes" once its answer is read; the connection is what must end.
    req.on("socket", (socket) => {
      socket.once("end", () => {
        endedAt = performance.now();
      });
      socket.once("close", () => {
        if (answeredAt === 0) {
          reject(new Error(`the connection closed after ${sent} bytes without an answer`));
          return;
        }
        resolve({
          status,
          detail: (JSON.parse(body) as { detail: string }).detail,
          answeredAfterLimitMs: answeredAt - crossedAt,
          endedAfterAnswerMs: endedAt - answeredAt,
          closedAfterAnswerMs: performance.now() - answeredAt,
        });
      });
    });
    // The server may close while the client still writes: that is the point, not a failure.
    req.on("error", () => {});
    const chunk = Buffer.alloc(CHUNK_BYTES, 0x20);
    const write = async () => {
      req.write("[");
      sent = 1;
      while (!req.destroyed && !req.socket?.destroyed) {
        sent += chunk.length;
        if (crossedAt === 0 && sent > maxRequestBodyBytes) crossedAt = performance.now();
        if (!req.write(chunk))
          await new Promise((resolve) => req.once("drain", resolve).once("close", resolve));
        await pause(CHUNK_PAUSE_MS);
      }
    };
    void write();
  });
}

describe("a large body trickled by a client that never stops on its own", () => {
  it.each([
    ["REST JSON", "/threads", "application/json"],
    ["multipart ingest", "/api/v1/runs/multipart", "multipart/form-data; boundary=b"],
  ])(
    "on %s: 413 promptly, then the server half-closes and closes",
    { timeout: 20_000 },
    async (_, path, type) => {
      const upload = await rawSlowUpload(path, type);
      expect(upload.status).toBe(413);
      expect(upload.detail).toMatch(/larger than 32 MiB/);
      expect(upload.reset).toBe(false);
      expect(upload.answeredAfterLimitMs).toBeLessThan(PROMPT_MS);
      // It reads at most a little more (1 MiB or 1 s), then half-closes, then closes.
      expect(upload.endedAfterAnswerMs).toBeGreaterThanOrEqual(0);
      expect(upload.endedAfterAnswerMs).toBeLessThan(DRAIN_WITHIN_MS);
      expect(upload.closedAfterAnswerMs).toBeLessThan(CLOSE_WITHIN_MS);
    },
  );
});

describe("a large body trickled over HTTP/1.1", () => {
  it.each([
    ["REST JSON", "/threads", { "content-type": "application/json" }, "keep-alive"],
    ["a REST-only JSON route", "/api/v1/runs/batch", { "content-type": "application/json" }, "close"],
  ] as const)(
    "gets its 413 on %s promptly, then the connection is closed (%s)",
    {
      timeout: 20_000,
    },
    async (_, path, headers, connection) => {
      const upload = await slowHttp1Upload(path, headers, connection);
      expect(upload.status).toBe(413);
      expect(upload.detail).toMatch(/larger than 32 MiB|exceeds the limit/);
      expect(upload.answeredAfterLimitMs).toBeLessThan(PROMPT_MS);
      expect(upload.closedAfterAnswerMs).toBeLessThan(CLOSE_WITHIN_MS);
    },
  );
});

describe("fetch streaming a large body", () => {
  it("resolves with the 413 promptly", { timeout: 20_000 }, async () => {
    let sent = 0;
    let crossedAt = 0;
    const chunk = new Uint8Array(CHUNK_BYTES).fill(0x20);
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        sent += chunk.length;
        if (crossedAt === 0 && sent > maxRequestBodyBytes) crossedAt = performance.now();
        await pause(CHUNK_PAUSE_MS);
        controller.enqueue(chunk);
      },
    });
    const res = await t.fetch("/threads", { method: "POST", body, duplex: "half" } as RequestInit);
    const answeredAt = performance.now();
    expect(res.status).toBe(413);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/larger than 32 MiB/);
    expect(answeredAt - crossedAt).toBeLessThan(PROMPT_MS);
    await body.cancel().catch(() => {});
  });
});

/** Sends headers announcing `length` bytes and a few bytes of body, then waits for the answer. */
function announceHttp1(path: string, length: number, headers: Record<string, string>) {
  return new Promise<{ status: number; ms: number; body: string }>((resolve, reject) => {
    const started = performance.now();
    const req = http.request(new URL(path, t.baseUrl), {
      method: "POST",
      agent: false,
      headers: { "x-api-key": t.adminKey, "content-length": String(length), ...headers },
    });
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (text: string) => {
        body += text;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body }));
    });
    req.on("error", reject);
    req.write("{}");
  });
}

describe("a Content-Length over the limit", () => {
  it.each([
    ["REST JSON", "/threads", "application/json"],
    ["multipart ingest", "/api/v1/runs/multipart", "multipart/form-data; boundary=b"],
    ["Connect", "/agentplane.agents.v1.ThreadService/CreateThread", "application/json"],
  ])("is answered on %s at once, without waiting for the body", async (_, path, type) => {
    const answer = await announceHttp1(path, maxRequestBodyBytes + 1, { "content-type": type });
    expect(answer.status).toBe(path.startsWith("/agentplane") ? 429 : 413);
    expect(answer.ms).toBeLessThan(PROMPT_MS);
  });
});

describe("HTTP/2", () => {
  it("answers a trickled REST body 413 promptly and resets the stream with NO_ERROR", {
    timeout: 20_000,
  }, async () => {
    const session = http2.connect(t.baseUrl);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": "/threads",
        "content-type": "application/json",
        "x-api-key": t.adminKey,
      });
      let sent = 0;
      let crossedAt = 0;
      const answer = new Promise<{ status: number; at: number }>((resolve) =>
        stream.once("response", (headers) =>
          resolve({ status: Number(headers[":status"]), at: performance.now() }),
        ),
      );
      let body = "";
      stream.setEncoding("utf8");
      stream.on("data", (text: string) => {
        body += text;
      });
      const closed = new Promise<number>((resolve) =>
        stream.once("close", () => resolve(stream.rstCode ?? -1)),
      );
      stream.on("error", () => {});
      const chunk = Buffer.alloc(CHUNK_BYTES, 0x20);
      void (async () => {
        while (!stream.closed && !stream.destroyed) {
          sent += chunk.length;
          if (crossedAt === 0 && sent > maxRequestBodyBytes) crossedAt = performance.now();
          if (!stream.write(chunk))
            await new Promise((resolve) => stream.once("drain", resolve).once("close", resolve));
          await pause(CHUNK_PAUSE_MS);
        }
      })();
      const { status, at } = await answer;
      const rstCode = await closed;
      expect(status).toBe(413);
      expect(at - crossedAt).toBeLessThan(PROMPT_MS);
      expect(JSON.parse(body)).toEqual({ detail: expect.stringContaining("larger than 32 MiB") });
      expect(rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    } finally {
      session.close();
    }
  });
});

describe("Connect and gRPC clients", () => {
  // A request message a little over the limit: a thread whose metadata holds one long string.
  const oversized = create(CreateThreadRequestSchema, {
    metadata: { note: "x".repeat(maxRequestBodyBytes + 1024) },
  });

  it("get RESOURCE_EXHAUSTED, not a reset, over Connect on HTTP/1.1", { timeout: 20_000 }, async () => {
    const client = createClient(
      ThreadService,
      createConnectTransport({ baseUrl: t.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    );
    const error = await client.createThread(oversized, { headers: { "x-api-key": t.adminKey } }).then(
      () => undefined,
      (reason: unknown) => ConnectError.from(reason),
    );
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(toBinary(CreateThreadRequestSchema, oversized).length).toBeGreaterThan(maxRequestBodyBytes);
  });

  it("get RESOURCE_EXHAUSTED over gRPC (HTTP/2)", { timeout: 20_000 }, async () => {
    // Node's HTTP/2 client queues the whole message at once; with its default 10 MB session memory
    // it then refuses any frame of an early answer (resetting the stream itself with
    // ENHANCE_YOUR_CALM), so a client sending messages this large needs more.
    const transport = createGrpcTransport({ baseUrl: t.baseUrl, nodeOptions: { maxSessionMemory: 128 } });
    const client = createClient(ThreadService, transport);
    const error = await client.createThread(oversized, { headers: { "x-api-key": t.adminKey } }).then(
      () => undefined,
      (reason: unknown) => ConnectError.from(reason),
    );
    expect(error?.code).toBe(Code.ResourceExhausted);
  });
});
