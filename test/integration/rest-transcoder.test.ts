/**
 * The REST transcoder end to end on a test-only service that uses every google.api.http feature,
 * over HTTP/1.1 and h2c, with REST, Connect JSON and gRPC compared for the same inputs. One file,
 * over 500 lines, because every suite shares the two servers and the probe started at the top.
 */
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import {
  createRegistry,
  type DescMessage,
  type DescMethod,
  type DescService,
  equals,
  fromJson,
  type JsonObject,
  type JsonValue,
  type Message,
  toJson,
} from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, createClient, type ServiceImpl } from "@connectrpc/connect";
import {
  connectNodeAdapter,
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCors } from "../../server/transport/rest/cors.js";
import { writeRestError } from "../../server/transport/rest/http-status.js";
import { createRestHandler } from "../../server/transport/rest/rest-handler.js";
import {
  file_agentplane_testing_v1_transcoding_service,
  Kind,
  TranscodingService,
} from "../gen/agentplane/testing/v1/transcoding_service_pb.js";
import {
  createTranscodingService,
  rejectedApiKey,
  type TranscodingProbe,
} from "../support/transcoding-service.js";

/** Short, so the heartbeat test does not wait 5 s; streams that never idle are unaffected. */
const heartbeatMs = 40;

interface Servers {
  /** HTTP/1.1 server: REST, SSE and Connect. */
  readonly base: string;
  /** h2c server with the same handler, for gRPC. */
  readonly grpcBase: string;
  readonly probe: TranscodingProbe;
  readonly shutdown: AbortController;
  close(): Promise<void>;
}

/**
 * One handler, as the product wires it: CORS first, then the Connect adapter with the bound
 * service; requests no RPC path matches fall back to the REST transcoder, then to a JSON 404.
 */
async function startServers(): Promise<Servers> {
  const { bound, probe } = createTranscodingService();
  const shutdown = new AbortController();
  const rest = createRestHandler({
    services: [bound],
    registry: createRegistry(file_agentplane_testing_v1_transcoding_service),
    heartbeatMs,
    shutdownSignal: shutdown.signal,
    onInternalError: (error) => probe.internalErrors.push(error),
  });
  const adapter = connectNodeAdapter({
    // A BoundService's impl is keyed like a ServiceImpl; its wrapped methods are typed loosely.
    routes: (router) => router.service(bound.service, bound.impl as unknown as ServiceImpl<DescService>),
    fallback: (req, res) => {
      void rest(req, res).then((handled) => {
        if (!handled) writeRestError(res, 404, `no route for ${req.method} ${req.url?.split("?")[0]}`);
      });
    },
  });
  const applyCors = createCors({ origins: ["https://app.example"], refuseUnlisted: false });
  const h1 = http.createServer((req, res) => {
    if (!applyCors(req, res)) adapter(req, res);
  });
  const h2 = http2.createServer((req, res) => {
    if (!applyCors(req, res)) adapter(req, res);
  });
  await new Promise<void>((resolve) => h1.listen(0, "127.0.0.1", resolve));
  await new Promise<void>((resolve) => h2.listen(0, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${(h1.address() as AddressInfo).port}`,
    grpcBase: `http://127.0.0.1:${(h2.address() as AddressInfo).port}`,
    probe,
    shutdown,
    async close() {
      h1.closeAllConnections();
      await new Promise((resolve) => h1.close(resolve));
      await new Promise((resolve) => h2.close(resolve));
    },
  };
}

/** One SSE frame as a client sees it (comments are skipped). */
interface SseFrame {
  id?: string;
  event?: string;
  data?: JsonValue;
}

function parseSse(text: string): SseFrame[] {
  return text
    .split("\n\n")
    .map((block) => block.split("\n").filter((line) => line !== "" && !line.startsWith(":")))
    .filter((lines) => lines.length > 0)
    .map((lines) => {
      const frame: SseFrame = {};
      for (const line of lines) {
        const [field, ...rest] = line.split(": ");
        const value = rest.join(": ");
        if (field === "data") frame.data = JSON.parse(value) as JsonValue;
        else if (field === "id" || field === "event") frame[field] = value;
      }
      return frame;
    });
}

let servers: Servers;
let base: string;

beforeAll(async () => {
  servers = await startServers();
  base = servers.base;
});

afterAll(() => servers.close());

async function call(
  path: string,
  init?: RequestInit,
): Promise<{ status: number; headers: Headers; body: JsonValue }> {
  const res = await fetch(`${base}${path}`, init);
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text === "" ? null : (JSON.parse(text) as JsonValue),
  };
}

function json(method: string, body: unknown, headers: Record<string, string> = {}): RequestInit {
  return { method, body: JSON.stringify(body), headers: { "content-type": "application/json", ...headers } };
}

const item = (id: string, shelf = ""): JsonObject => ({
  id,
  name: `item ${id}`,
  tags: ["red", "small"],
  quantity: 3,
  weight: "9007199254740993",
  archived: false,
  kind: "KIND_BOOK",
  created_at: "2024-05-06T07:08:09.010Z",
  shelf,
  owner: { name: "Ann", email: "ann@example.com" },
});

describe("mapping features", () => {
  it("{id} path variable, every field emitted with proto names, int64 as a string", async () => {
    const res = await call("/v1/items/abc");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.body).toEqual(item("abc"));
  });

  it("additional binding with two decoded path variables", async () => {
    expect((await call("/v1/shelves/s%201/items/a%2Fb")).body).toEqual(item("a/b", "s 1"));
  });

  it("multi-segment capture keeps / and %2F", async () => {
    expect((await call("/v1/shelves/1/books/a/b%2Fc")).body).toEqual({ name: "shelves/1/books/a/b%2Fc" });
  });

  it('body "*" with handler headers passed through', async () => {
    const res = await call(
      "/v1/items",
      json("POST", { name: "lamp", tags: ["x"], kind: "KIND_TOOL", createdAt: "2024-01-02T03:04:05Z" }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("location")).toBe("/v1/items/new-1");
    expect(res.headers.get("content-location")).toBe("/v1/items/new-1");
    expect(res.body).toEqual({
      id: "new-1",
      name: "lamp",
      tags: ["x"],
      quantity: 0,
      weight: "0",
      archived: false,
      kind: "KIND_TOOL",
      created_at: "2024-01-02T03:04:05Z",
      shelf: "",
    });
  });

  it('body "item" with the path variable inside it and query parameters beside it', async () => {
    const res = await call(
      "/v1/items/u1?update_mask=name",
      json("PATCH", { id: "ignored", name: "n", tags: ["t"] }),
    );
    expect(res.body).toMatchObject({ id: "u1", name: "n", tags: ["t", "mask:name"] });
  });

  it("a custom verb with a scalar body field", async () => {
    expect((await call("/v1/items/a:archive", json("POST", "too old"))).body).toMatchObject({
      id: "a",
      name: "too old",
      archived: true,
    });
  });

  it("a custom HTTP method", async () => {
    expect((await call("/v1/items/r", { method: "REPORT" })).body).toMatchObject({ id: "r", name: "report" });
  });

  it("query parameters of every kind", async () => {
    const query =
      "q=a+b&exact=1&limit=7&offset=9007199254740993&min_score=2.5&kind=2&tags=x&tags=y" +
      "&filter.owner=ann&filter.min_quantity=4&created_after=2024-01-31T12:00:00Z&archived=true&kinds=KIND_BOOK";
    expect((await call(`/v1/search?${query}`)).body).toEqual({
      query: {
        q: "a b",
        exact: true,
        limit: 7,
        offset: "9007199254740993",
        min_score: 2.5,
        kind: "KIND_TOOL",
        tags: ["x", "y"],
        filter: { owner: "ann", min_quantity: 4 },
        created_after: "2024-01-31T12:00:00Z",
        archived: true,
        kinds: ["KIND_BOOK"],
      },
    });
  });

  it("response_body: a bare array, with pagination headers passed through", async () => {
    const res = await call("/v1/items?limit=2");
    expect(res.body).toEqual([item("i1"), item("i2")]);
    expect(res.headers.get("x-pagination-total")).toBe("5");
    expect(res.headers.get("x-pagination-next")).toBe("2");
  });

  it("response_body: a bare number and a bare message", async () => {
    expect((await call("/v1/kinds/KIND_TOOL/items:count")).body).toBe(42);
    expect((await call("/v1/items/o/owner")).body).toEqual({
      name: "owner of o",
      email: "owner@example.com",
    });
  });

  it("an empty response is {}", async () => {
    expect(await call("/v1/items/d", { method: "DELETE" })).toMatchObject({ status: 200, body: {} });
  });

  it("accepts a gzip request body", async () => {
    const res = await call("/v1/items", {
      method: "POST",
      body: gzipSync(JSON.stringify({ name: "zipped" })),
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    });
    expect(res.body).toMatchObject({ name: "zipped" });
  });

  it("passes request headers to the guard", async () => {
    await call("/v1/items/k", { headers: { "x-api-key": "key-123" } });
    expect(servers.probe.apiKeys).toContain("key-123");
  });
});

describe("errors", () => {
  it.each([
    ["unauthenticated", 401],
    ["permission_denied", 403],
    ["not_found", 404],
    ["already_exists", 409],
    ["aborted", 409],
    ["failed_precondition", 409],
    ["invalid_argument", 422],
    ["out_of_range", 422],
    ["resource_exhausted", 429],
    ["canceled", 499],
    ["unknown", 500],
    ["internal", 500],
    ["data_loss", 500],
    ["unimplemented", 501],
    ["unavailable", 503],
    ["deadline_exceeded", 504],
  ])("%s answers %i with exactly {detail}", async (code, status) => {
    const res = await call(`/v1/fail/${code}?message=${encodeURIComponent(`it is ${code}`)}`);
    expect(res.status).toBe(status);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.body).toEqual({ detail: `it is ${code}` });
  });

  it("hides unexpected errors behind 500 internal error and reports them", async () => {
    const res = await call("/v1/fail/bug");
    expect(res).toMatchObject({ status: 500, body: { detail: "internal error" } });
    expect(String(servers.probe.internalErrors.at(-1))).toContain("SELECT secret");
  });

  it("answers 401 when the guard refuses the API key", async () => {
    const res = await call("/v1/items/a", { headers: { "x-api-key": rejectedApiKey } });
    expect(res).toMatchObject({ status: 401, body: { detail: "the API key is not valid" } });
  });

  it("answers 405 with Allow when the path exists under other methods", async () => {
    const res = await call("/v1/items/a", { method: "PUT" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("DELETE, GET, PATCH, REPORT, HEAD");
    expect(res.body).toEqual({
      detail: "method not allowed; this path accepts DELETE, GET, PATCH, REPORT, HEAD",
    });
  });

  it("answers 404 JSON when no route matches", async () => {
    expect(await call("/x?y=1")).toMatchObject({ status: 404, body: { detail: "no route for GET /x" } });
  });

  it("answers malformed JSON with 400", async () => {
    const res = await call("/v1/items", { method: "POST", body: '{"name": nope}' });
    expect(res.status).toBe(400);
    expect((res.body as JsonObject).detail).toMatch(/^the request body is not valid JSON: /);
  });

  it("answers a wrong type with 422 naming the field", async () => {
    const res = await call("/v1/items", json("POST", { owner: { name: 7 } }));
    expect(res).toMatchObject({
      status: 422,
      body: { detail: 'field "owner.name" of the request body must be a string, got 7' },
    });
  });

  it("answers an unknown query parameter with 422 listing the accepted ones", async () => {
    const res = await call("/v1/items?limt=2");
    expect(res).toMatchObject({
      status: 422,
      body: { detail: 'unknown query parameter "limt"; GET /v1/items accepts: limit' },
    });
  });
});

describe("CORS", () => {
  const origin = "https://app.example";

  it.each(["/v1/items", "/agentplane.testing.v1.TranscodingService/GetItem"])(
    "answers a preflight for %s with 204",
    async (path) => {
      const res = await fetch(`${base}${path}`, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": "POST",
          "access-control-request-headers": "x-api-key",
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe(origin);
      expect(res.headers.get("access-control-allow-methods")).toBe("GET, POST, PUT, PATCH, DELETE, OPTIONS");
      const allowed = res.headers.get("access-control-allow-headers")!.toLowerCase().split(", ");
      for (const header of [
        "x-api-key",
        "x-tenant-id",
        "last-event-id",
        "authorization",
        "connect-protocol-version",
      ]) {
        expect(allowed).toContain(header);
      }
      expect(res.headers.get("access-control-max-age")).toBe("7200");
    },
  );

  it("adds allow-origin and exposed headers to REST and Connect responses", async () => {
    const rest = await fetch(`${base}/v1/items`, { headers: { origin } });
    expect(rest.headers.get("access-control-allow-origin")).toBe(origin);
    expect(rest.headers.get("vary")).toBe("Origin");
    const exposed = rest.headers.get("access-control-expose-headers")!.toLowerCase().split(", ");
    for (const header of [
      "x-pagination-total",
      "x-pagination-next",
      "content-location",
      "location",
      "grpc-status",
    ]) {
      expect(exposed).toContain(header);
    }
    const connect = await fetch(`${base}/agentplane.testing.v1.TranscodingService/GetItem`, {
      method: "POST",
      headers: { origin, "content-type": "application/json" },
      body: '{"id":"c"}',
    });
    expect(connect.status).toBe(200);
    expect(connect.headers.get("access-control-allow-origin")).toBe(origin);
  });

  it("leaves requests without Origin alone, and non-preflight OPTIONS to the router", async () => {
    const plain = await fetch(`${base}/v1/items`);
    expect(plain.headers.get("access-control-allow-origin")).toBeNull();
    expect((await fetch(`${base}/v1/items`, { method: "OPTIONS", headers: { origin } })).status).toBe(405);
  });
});

describe("server-sent events", () => {
  it("frames ordinary messages as event: message with sequence ids", async () => {
    const res = await fetch(`${base}/v1/items:watch?count=2&content_location=/v1/items/w`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    expect(res.headers.get("content-location")).toBe("/v1/items/w");
    expect(parseSse(await res.text())).toEqual([
      { id: "1", event: "message", data: item("w1") },
      { id: "2", event: "message", data: item("w2") },
    ]);
  });

  it("frames ServerSentEvent messages with their own id, event and data; one data line each", async () => {
    const res = await fetch(`${base}/v1/events?count=2`);
    const text = await res.text();
    expect(text.split("\n").filter((line) => line.startsWith("data: "))).toHaveLength(3);
    expect(parseSse(text)).toEqual([
      { id: "1", event: "values", data: { n: 1, text: "line1\nline2" } },
      { id: "2", event: "values", data: { n: 2, text: "line1\nline2" } },
      { event: "message", data: { done: true } },
    ]);
  });

  it("lets the handler see Last-Event-ID", async () => {
    const res = await fetch(`${base}/v1/events?count=1`, { headers: { "last-event-id": "41" } });
    expect(parseSse(await res.text())[0]).toMatchObject({ id: "42" });
    expect(servers.probe.lastEventIds.at(-1)).toBe("41");
  });

  it("sends heartbeat comments while the stream is idle", async () => {
    const text = await (await fetch(`${base}/v1/items:watch?count=1&delay_ms=${heartbeatMs * 4}`)).text();
    expect(text.startsWith(": heartbeat\n")).toBe(true);
    expect(parseSse(text)).toHaveLength(1);
  });

  it("answers a normal REST error when the stream fails before its first message", async () => {
    const res = await call("/v1/items:watch?count=0&fail_code=permission_denied");
    expect(res).toMatchObject({ status: 403, body: { detail: "stream failed with permission_denied" } });
  });

  it("sends event: error when the stream fails after it began, then ends", async () => {
    const res = await fetch(`${base}/v1/items:watch?count=1&fail_code=not_found`);
    expect(res.status).toBe(200);
    expect(parseSse(await res.text())).toEqual([
      { id: "1", event: "message", data: item("w1") },
      { event: "error", data: { error: "not_found", message: "stream failed with not_found" } },
    ]);
  });

  it("aborts the handler when the client disconnects, and its finally runs", async () => {
    const client = new AbortController();
    const res = await fetch(`${base}/v1/items:watch?count=1&hold=true`, { signal: client.signal });
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain("event: message");
    const before = servers.probe.watchFinished.length;
    client.abort();
    await expect.poll(() => servers.probe.watchFinished.length).toBe(before + 1);
    expect(servers.probe.watchFinished.at(-1)).toEqual({ aborted: true });
  });
});

describe("REST over h2c (the one-port server's HTTP/2 side)", () => {
  /** One request on a fresh h2c session; resolves with the status, a header and the body. */
  function h2Get(path: string): Promise<{ status: number; contentType: string; text: string }> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(servers.grpcBase);
      session.on("error", reject);
      const stream = session.request({ ":path": path });
      let text = "";
      let status = 0;
      let contentType = "";
      stream.setEncoding("utf8");
      stream.on("response", (headers) => {
        status = Number(headers[":status"]);
        contentType = String(headers["content-type"]);
      });
      stream.on("data", (chunk: string) => {
        text += chunk;
      });
      stream.on("end", () => {
        session.close();
        resolve({ status, contentType, text });
      });
      stream.on("error", reject);
    });
  }

  it("answers unary REST calls", async () => {
    const res = await h2Get("/v1/items/h2");
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual(item("h2"));
  });

  it("streams SSE", async () => {
    const res = await h2Get("/v1/items:watch?count=2");
    expect(res.contentType).toBe("text/event-stream");
    expect(parseSse(res.text).map((frame) => frame.id)).toEqual(["1", "2"]);
  });
});

/** The REST JSON of a response, as the transcoder writes it, narrowed by response_body. */
function restJsonOf(method: DescMethod, response: Message, responseBody?: string): JsonValue {
  const output: DescMessage = method.output;
  const full = toJson(output, response, {
    useProtoFieldName: true,
    alwaysEmitImplicit: true,
  }) as JsonObject;
  return responseBody ? full[responseBody]! : full;
}

interface EquivalenceCase {
  method: keyof typeof TranscodingService.method;
  request: Record<string, unknown>;
  path: string;
  init?: RequestInit;
  responseBody?: string;
}

const equivalenceCases: EquivalenceCase[] = [
  { method: "getItem", request: { id: "abc" }, path: "/v1/items/abc" },
  { method: "getItem", request: { id: "x/y", shelf: "s 1" }, path: "/v1/shelves/s%201/items/x%2Fy" },
  { method: "getBook", request: { name: "shelves/1/books/a/b" }, path: "/v1/shelves/1/books/a/b" },
  {
    method: "createItem",
    request: { name: "n", tags: ["a"], quantity: 2, weight: 5n, kind: Kind.TOOL, owner: { name: "o" } },
    path: "/v1/items",
    init: json("POST", {
      name: "n",
      tags: ["a"],
      quantity: 2,
      weight: "5",
      kind: "KIND_TOOL",
      owner: { name: "o" },
    }),
  },
  {
    method: "updateItem",
    request: { item: { id: "u1", name: "n", tags: ["t"] }, updateMask: "name" },
    path: "/v1/items/u1?update_mask=name",
    init: json("PATCH", { name: "n", tags: ["t"] }),
  },
  {
    method: "archiveItem",
    request: { id: "a", reason: "old" },
    path: "/v1/items/a:archive",
    init: json("POST", "old"),
  },
  { method: "reportItem", request: { id: "r" }, path: "/v1/items/r", init: { method: "REPORT" } },
  {
    method: "search",
    request: {
      q: "a b",
      exact: true,
      limit: 7,
      offset: 9_007_199_254_740_993n,
      minScore: 2.5,
      kind: Kind.TOOL,
      tags: ["x", "y"],
      filter: { owner: "ann", minQuantity: 4 },
      createdAfter: timestampFromDate(new Date("2024-01-31T12:00:00Z")),
      archived: false,
      kinds: [Kind.BOOK, Kind.TOOL],
    },
    path:
      "/v1/search?q=a%20b&exact=true&limit=7&offset=9007199254740993&minScore=2.5&kind=KIND_TOOL&tags=x&tags=y" +
      "&filter.owner=ann&filter.minQuantity=4&createdAfter=2024-01-31T12:00:00Z&archived=false&kinds=1&kinds=2",
  },
  { method: "listItems", request: { limit: 3 }, path: "/v1/items?limit=3", responseBody: "items" },
  {
    method: "countItems",
    request: { kind: Kind.BOOK },
    path: "/v1/kinds/1/items:count",
    responseBody: "count",
  },
  { method: "getItemOwner", request: { id: "o" }, path: "/v1/items/o/owner", responseBody: "owner" },
  { method: "deleteItem", request: { id: "d" }, path: "/v1/items/d", init: { method: "DELETE" } },
];

describe("REST, Connect JSON and gRPC answer the same", () => {
  type AnyClient = Record<string, (request: unknown) => Promise<Message>>;
  let connect: AnyClient;
  let grpc: AnyClient;
  let sessions: Http2SessionManager;

  beforeAll(() => {
    const asAny = (client: Client<typeof TranscodingService>) => client as unknown as AnyClient;
    connect = asAny(
      createClient(
        TranscodingService,
        createConnectTransport({ baseUrl: base, httpVersion: "1.1", useBinaryFormat: false }),
      ),
    );
    sessions = new Http2SessionManager(servers.grpcBase);
    grpc = asAny(
      createClient(
        TranscodingService,
        createGrpcTransport({ baseUrl: servers.grpcBase, sessionManager: sessions }),
      ),
    );
  });

  afterAll(() => sessions.abort());

  it.each(equivalenceCases)("$method via $path", async ({ method, request, path, init, responseBody }) => {
    const desc = TranscodingService.method[method];
    const output: DescMessage = desc.output;
    const [viaConnect, viaGrpc, viaRest] = await Promise.all([
      connect[method]!(request),
      grpc[method]!(request),
      call(path, init),
    ]);
    expect(viaRest.status).toBe(200);
    expect(equals(output, viaConnect, viaGrpc)).toBe(true);
    expect(viaRest.body).toEqual(restJsonOf(desc, viaConnect, responseBody));
    if (!responseBody) expect(equals(output, fromJson(output, viaRest.body!), viaConnect)).toBe(true);
  });

  it("server streams carry the same messages over SSE, Connect and gRPC", async () => {
    const output: DescMessage = TranscodingService.method.watchItems.output;
    const collect = async (client: AnyClient) => {
      const out: Message[] = [];
      for await (const m of client.watchItems!({ count: 3 }) as unknown as AsyncIterable<Message>)
        out.push(m);
      return out;
    };
    const [viaConnect, viaGrpc, viaRest] = await Promise.all([
      collect(connect),
      collect(grpc),
      fetch(`${base}/v1/items:watch?count=3`).then((res) => res.text()),
    ]);
    const restMessages = parseSse(viaRest).map((frame) => fromJson(output, frame.data!));
    expect(restMessages).toHaveLength(3);
    for (const [i, m] of viaConnect.entries()) {
      expect(equals(output, m, viaGrpc[i]!)).toBe(true);
      expect(equals(output, m, restMessages[i]!)).toBe(true);
    }
  });
});

describe("graceful shutdown", () => {
  it("ends open SSE streams cleanly when the shutdown signal fires", async () => {
    const own = await startServers();
    try {
      const res = await fetch(`${own.base}/v1/items:watch?count=1&hold=true`);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = decoder.decode((await reader.read()).value);
      own.shutdown.abort();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
        text += decoder.decode(chunk.value);
      expect(parseSse(text)).toEqual([{ id: "1", event: "message", data: item("w1") }]);
      await expect.poll(() => own.probe.watchFinished).toEqual([{ aborted: true }]);
    } finally {
      await own.close();
    }
  });
});
