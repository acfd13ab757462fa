import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { createRegistry, type JsonValue, toJson } from "@bufbuild/protobuf";
import { Code, type ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  file_agentplane_testing_v1_transcoding_service,
  TranscodingService,
} from "../../../test/gen/agentplane/testing/v1/transcoding_service_pb.js";
import { maxRequestBodyBytes } from "../body/body-limit.js";
import { restErrorStatus } from "./http-status.js";
import { createRequestDecoder } from "./request-decoder.js";
import { createRouteTable } from "./route-table.js";

/**
 * A real HTTP server that only decodes: it answers 200 with the decoded request message as
 * proto-named JSON, or the decoder's error as `{code, detail}` with its REST status. A lenient one
 * says what it ignored in the `x-ignored` header (JSON).
 */
function createDecodingServer(lenient = false): Server {
  const registry = createRegistry(file_agentplane_testing_v1_transcoding_service);
  const table = createRouteTable([TranscodingService]);
  const decoders = new Map(
    table.routes.map((route) => [route, createRequestDecoder(route, registry, { lenient })]),
  );
  return createServer(async (req, res) => {
    const [path = "", query = ""] = (req.url ?? "").split("?");
    const found = table.lookup(req.method ?? "", path);
    if (found?.kind !== "match") {
      res.writeHead(404).end();
      return;
    }
    try {
      const ignored: string[] = [];
      const message = await decoders.get(found.route)!(req, found.captures, query, ignored);
      const json = toJson(found.route.method.input, message, { useProtoFieldName: true, registry });
      res
        .writeHead(200, { "content-type": "application/json", "x-ignored": JSON.stringify(ignored) })
        .end(JSON.stringify(json));
    } catch (error) {
      const e = error as ConnectError;
      res.writeHead(restErrorStatus(e)).end(JSON.stringify({ code: Code[e.code], detail: e.rawMessage }));
    }
  });
}

let server: Server;
let base: string;
let lenientServer: Server;
let lenientBase: string;

async function listen(s: Server): Promise<string> {
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  server = createDecodingServer();
  base = await listen(server);
  lenientServer = createDecodingServer(true);
  lenientBase = await listen(lenientServer);
});

afterAll(async () => {
  for (const s of [server, lenientServer]) await new Promise<void>((resolve) => s.close(() => resolve()));
});

async function decode(path: string, init?: RequestInit): Promise<{ status: number; body: JsonValue }> {
  const res = await fetch(`${base}${path}`, init);
  return { status: res.status, body: (await res.json()) as JsonValue };
}

/** Decodes with the lenient decoder: the message, and what it ignored. */
async function decodeLeniently(
  path: string,
  init?: RequestInit,
): Promise<{ status: number; body: JsonValue; ignored: JsonValue }> {
  const res = await fetch(`${lenientBase}${path}`, init);
  return {
    status: res.status,
    body: (await res.json()) as JsonValue,
    ignored: JSON.parse(res.headers.get("x-ignored") ?? "null") as JsonValue,
  };
}

function post(body: string, method = "POST", headers?: Record<string, string>): RequestInit {
  return { method, body, headers: { "content-type": "application/json", ...headers } };
}

describe("body mapping", () => {
  it('body "*" takes the whole body, in snake_case or lowerCamelCase', async () => {
    const { status, body } = await decode(
      "/v1/items",
      post('{"name":"n","created_at":"2024-01-01T00:00:00Z","owner":{"name":"o"},"quantity":2}'),
    );
    expect(status).toBe(200);
    expect(body).toEqual({
      name: "n",
      created_at: "2024-01-01T00:00:00Z",
      owner: { name: "o" },
      quantity: 2,
    });
    const camel = await decode("/v1/items", post('{"createdAt":"2024-01-01T00:00:00Z"}'));
    expect(camel.body).toEqual({ created_at: "2024-01-01T00:00:00Z" });
  });

  it("treats an empty body as an empty message", async () => {
    expect(await decode("/v1/items", { method: "POST" })).toEqual({ status: 200, body: {} });
  });

  it('body "item" puts the body in that field; the path variable inside it wins', async () => {
    const { body } = await decode(
      "/v1/items/from-path?update_mask=name&validate_only=1",
      post('{"id":"from-body","name":"n"}', "PATCH"),
    );
    expect(body).toEqual({ item: { id: "from-path", name: "n" }, update_mask: "name", validate_only: true });
  });

  it("a scalar body field takes a bare JSON value", async () => {
    const { body } = await decode("/v1/items/a:archive", post('"too old"'));
    expect(body).toEqual({ id: "a", reason: "too old" });
  });

  it("accepts a gzip body", async () => {
    const init = post("", "POST", { "content-encoding": "gzip" });
    const { status, body } = await decode("/v1/items", { ...init, body: gzipSync('{"name":"zipped"}') });
    expect(status).toBe(200);
    expect(body).toEqual({ name: "zipped" });
  });
});

describe("path variables", () => {
  it("percent-decodes single-segment variables", async () => {
    const { body } = await decode("/v1/shelves/s%201/items/a%2Fb");
    expect(body).toEqual({ shelf: "s 1", id: "a/b" });
  });

  it("keeps / and %2F in multi-segment variables", async () => {
    const { body } = await decode("/v1/shelves/s1/books/a%20b/c%2Fd");
    expect(body).toEqual({ name: "shelves/s1/books/a b/c%2Fd" });
  });

  it("answers 400 to a malformed percent-escape", async () => {
    const { status, body } = await decode("/v1/items/%E0%A4%A");
    expect(status).toBe(400);
    expect(body).toMatchObject({ detail: 'path parameter "id" is not validly percent-encoded' });
  });

  it("converts a path variable by its field type", async () => {
    expect((await decode("/v1/kinds/KIND_TOOL/items:count")).body).toEqual({ kind: "KIND_TOOL" });
    expect((await decode("/v1/kinds/1/items:count")).body).toEqual({ kind: "KIND_BOOK" });
    const { status, body } = await decode("/v1/kinds/tools/items:count");
    expect(status).toBe(422);
    expect(body).toMatchObject({
      detail: 'path parameter "kind" must be one of KIND_UNSPECIFIED, KIND_BOOK, KIND_TOOL, got "tools"',
    });
  });
});

describe("query parameters", () => {
  it("converts every kind of field", async () => {
    const query = [
      "q=hello+world",
      "exact=true",
      "limit=25",
      "offset=9007199254740993",
      "min_score=0.5",
      "kind=KIND_TOOL",
      "tags=a",
      "tags=b",
      "filter.owner=ann",
      "filter.minQuantity=3",
      "created_after=2024-01-31T12:00:00Z",
      "archived=0",
      "kinds=1",
      "kinds=KIND_TOOL",
    ].join("&");
    const { status, body } = await decode(`/v1/search?${query}`);
    expect(status).toBe(200);
    expect(body).toEqual({
      q: "hello world",
      exact: true,
      limit: 25,
      offset: "9007199254740993",
      min_score: 0.5,
      kind: "KIND_TOOL",
      tags: ["a", "b"],
      filter: { owner: "ann", min_quantity: 3 },
      created_after: "2024-01-31T12:00:00Z",
      archived: false,
      kinds: ["KIND_BOOK", "KIND_TOOL"],
    });
  });

  it.each([
    ["exact=yes", 'query parameter "exact" must be true or false, got "yes"'],
    ["limit=abc", 'query parameter "limit" must be a 32-bit integer, got "abc"'],
    ["limit=3000000000", 'query parameter "limit" must be a 32-bit integer, got "3000000000"'],
    ["min_score=x", 'query parameter "min_score" must be a number, got "x"'],
    [
      "kind=KIND_NOPE",
      'query parameter "kind" must be one of KIND_UNSPECIFIED, KIND_BOOK, KIND_TOOL, got "KIND_NOPE"',
    ],
    [
      "offset=1.5",
      'query parameter "offset" must be a 64-bit integer (a number or a string of digits), got "1.5"',
    ],
    ["offset=99999999999999999999", 'query parameter "offset" must be a 64-bit integer'],
    ["created_after=yesterday", 'query parameter "created_after" must be an RFC 3339 timestamp'],
    [
      "bogus=1",
      'unknown query parameter "bogus"; GET /v1/search accepts: q, exact, limit, offset, min_score',
    ],
    ["filter.nope=1", 'unknown query parameter "filter.nope": "filter" has no field "nope"'],
    ["q.x=1", 'query parameter "q.x": "q" has no fields to set with a dotted name'],
    [
      "filter=1",
      'query parameter "filter" cannot be given as a string: set its fields instead, such as "filter.owner"',
    ],
    ["limit=1&limit=2", 'query parameter "limit" is given more than once'],
    ["min_score=1&minScore=2", 'query parameter "minScore" is given more than once'],
  ])("rejects %s with 422", async (query, detail) => {
    const { status, body } = await decode(`/v1/search?${query}`);
    expect(status).toBe(422);
    expect(body).toMatchObject({ code: "InvalidArgument" });
    expect((body as { detail: string }).detail).toContain(detail);
  });

  it("refuses query parameters for fields the path or the body sets", async () => {
    expect((await decode("/v1/items/a?id=b")).body).toMatchObject({
      detail: 'query parameter "id" is not accepted: GET /v1/items/{id} sets it from the URL path',
    });
    expect((await decode("/v1/items/a?item.name=x", post("{}", "PATCH"))).body).toMatchObject({
      detail:
        'query parameter "item.name" is not accepted: PATCH /v1/items/{item.id} reads "item" from the body',
    });
    expect((await decode("/v1/items?name=x", post("{}"))).body).toMatchObject({
      detail: 'query parameter "name" is not accepted: POST /v1/items takes all its input from the JSON body',
    });
  });
});

describe("body errors", () => {
  it("answers malformed JSON with 400", async () => {
    const { status, body } = await decode("/v1/items", post('{"name":'));
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: "InvalidArgument" });
    expect((body as { detail: string }).detail).toMatch(/^the request body is not valid JSON: /);
  });

  it.each([
    ['{"owner":{"email":3}}', 'field "owner.email" of the request body must be a string, got 3'],
    ['{"tags":["a",2]}', 'field "tags[1]" of the request body must be a string, got 2'],
    [
      '{"tags":"a"}',
      'field "tags" of the request body must be an array whose items are each a string, got "a"',
    ],
    ['{"quantity":"many"}', 'field "quantity" of the request body must be a 32-bit integer, got "many"'],
    ['{"kind":"KIND_NOPE"}', 'field "kind" of the request body must be one of KIND_UNSPECIFIED, KIND_BOOK'],
    ['{"createdAt":"soon"}', 'field "created_at" of the request body must be an RFC 3339 timestamp'],
    ['{"owner":"ann"}', 'field "owner" of the request body must be a JSON object, got "ann"'],
    [
      '{"owner":{"emial":"x"}}',
      'field "owner.emial" of the request body is not a known field; the known fields here are: name, email',
    ],
    ["[1,2]", "the request body must be a JSON object, got [1,2]"],
    [
      '{"created_at":"2024-01-01T00:00:00Z","createdAt":"2024-01-01T00:00:00Z"}',
      'the request is invalid: field "created_at" set multiple times',
    ],
  ])("rejects %s with 422 and a field-naming message", async (json, detail) => {
    const { status, body } = await decode("/v1/items", post(json));
    expect(status).toBe(422);
    expect((body as { detail: string }).detail).toContain(detail);
  });

  it("names the body itself when a scalar body field has the wrong type", async () => {
    const { status, body } = await decode("/v1/items/a:archive", post("3"));
    expect(status).toBe(422);
    expect(body).toMatchObject({ detail: "the request body must be a string, got 3" });
  });

  it("names fields relative to the body when the body is one field", async () => {
    const { body } = await decode("/v1/items/a", post('{"quantity":true}', "PATCH"));
    expect(body).toMatchObject({
      detail: 'field "quantity" of the request body must be a 32-bit integer, got true',
    });
  });

  it("answers 400 to corrupt gzip data and 415 to unknown encodings", async () => {
    const corrupt = await decode("/v1/items", post("not gzip", "POST", { "content-encoding": "gzip" }));
    expect(corrupt).toEqual({
      status: 400,
      body: { code: "InvalidArgument", detail: "the request body is not valid gzip data" },
    });
    const brotli = await decode("/v1/items", post("{}", "POST", { "content-encoding": "br" }));
    expect(brotli.status).toBe(415);
    expect(brotli.body).toMatchObject({
      detail: expect.stringContaining('Content-Encoding "br" is not supported'),
    });
  });

  it("answers 413 to a body over the limit, declared or streamed, and to a gzip bomb", async () => {
    const tooBig = Buffer.alloc(maxRequestBodyBytes + 1, 0x20);
    const declared = await decode("/v1/items", { method: "POST", body: tooBig });
    expect(declared.status).toBe(413);
    expect(declared.body).toMatchObject({
      code: "ResourceExhausted",
      detail: expect.stringContaining("32 MiB"),
    });

    const streamed = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(tooBig);
        controller.close();
      },
    });
    const chunked = await decode("/v1/items", {
      method: "POST",
      body: streamed,
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(413);

    const bomb = gzipSync(Buffer.alloc(maxRequestBodyBytes + 1, 0x20));
    const inflated = await decode("/v1/items", {
      method: "POST",
      body: bomb,
      headers: { "content-encoding": "gzip" },
    });
    expect(inflated.status).toBe(413);
  });
});

describe("the lenient decoder (LangGraph- and LangSmith-compatible services)", () => {
  it("ignores body members no field knows, at every depth, and names them", async () => {
    const { status, body, ignored } = await decodeLeniently(
      "/v1/items",
      post('{"name":"a","colour":"red","owner":{"name":"ann","emial":"x","nested":{"deep":1}}}'),
    );
    expect(status).toBe(200);
    expect(body).toEqual({ name: "a", owner: { name: "ann" } });
    expect(ignored).toEqual(["colour", "owner.emial", "owner.nested"]);
  });

  it("ignores unknown members of a body that is one field, named relative to the body", async () => {
    const { status, body, ignored } = await decodeLeniently(
      "/v1/items/a?validate_only=true",
      post('{"name":"n","future":true}', "PATCH"),
    );
    expect(status).toBe(200);
    expect(body).toEqual({ item: { id: "a", name: "n" }, validate_only: true });
    expect(ignored).toEqual(["future"]);
  });

  it("ignores query parameters no field knows, also where the body holds every field", async () => {
    const search = await decodeLeniently("/v1/search?q=x&bogus=1&filter.nope=2");
    expect(search).toEqual({ status: 200, body: { q: "x" }, ignored: ["bogus", "filter.nope"] });
    const create = await decodeLeniently("/v1/items?future=1", post('{"name":"a"}'));
    expect(create).toEqual({ status: 200, body: { name: "a" }, ignored: ["future"] });
  });

  it("still refuses a known field given wrongly", async () => {
    const cases: [string, RequestInit | undefined, string][] = [
      ["/v1/items", post('{"quantity":"many","colour":1}'), 'field "quantity" of the request body must be'],
      ["/v1/search?limit=lots", undefined, 'query parameter "limit" must be'],
      ["/v1/items?name=x", post("{}"), 'query parameter "name" is not accepted'],
      ["/v1/items/a?id=b", undefined, 'query parameter "id" is not accepted'],
    ];
    for (const [path, init, detail] of cases) {
      const { status, body } = await decodeLeniently(path, init);
      expect(status, path).toBe(422);
      expect((body as { detail: string }).detail, path).toContain(detail);
    }
  });
});
