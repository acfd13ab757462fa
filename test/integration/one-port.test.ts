// One server on port 0, driven by real clients of every protocol it speaks. Over 400 lines because it
// is the one place that proves the protocols, reflection, health and the connection lifecycle
// (keep-alive, garbage, graceful shutdown) on the same port; the helpers at the top serve every suite.
import { execFile } from "node:child_process";
import http2 from "node:http2";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type ServiceImpl, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SystemService } from "../../gen/agentplane/system/v1/system_service_pb.js";
import { Health, HealthCheckResponse_ServingStatus as S } from "../../gen/grpc/health/v1/health_pb.js";
import * as reflectionV1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { createLogger } from "../../server/logger.js";
import { type BoundService, bindService } from "../../server/transport/bound-service.js";
import { createHealthRegistry } from "../../server/transport/health.js";
import { createHttpHandler } from "../../server/transport/http-handler.js";
import { createOnePortServer, type OnePortServer } from "../../server/transport/one-port-server.js";
import { createTranscodingService } from "../support/transcoding-service.js";

const BUF = fileURLToPath(new URL("../../node_modules/.bin/buf", import.meta.url));
const run = promisify(execFile);

/** A SystemService answering fixed values; `Ok` with `check_db` waits until the test releases it. */
function createFixture(options: { keepAliveTimeoutMs?: number; extraServices?: BoundService[] } = {}) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let slowCalls = 0;
  const slowCallStarted = new EventTarget();
  const slowCallsStarted = (count: number) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (slowCalls < count) return;
        slowCallStarted.removeEventListener("started", check);
        resolve();
      };
      slowCallStarted.addEventListener("started", check);
      check();
    });
  const impl: ServiceImpl<typeof SystemService> = {
    async ok(request) {
      if (request.checkDb) {
        slowCalls++;
        slowCallStarted.dispatchEvent(new Event("started"));
        await released;
      }
      return { ok: true };
    },
    getInfo: () => ({
      version: "1.2.3",
      role: "all",
      flags: { assistants: true, bulkExport: true },
    }),
  };
  const internalErrors: unknown[] = [];
  const system = bindService(SystemService, impl, { onInternalError: (error) => internalErrors.push(error) });
  const health = createHealthRegistry([SystemService.typeName, Health.typeName]);
  const shutdown = new AbortController();
  const services = [system, ...(options.extraServices ?? [])];
  const logLines: string[] = [];
  const log = createLogger("error", (line) => logLines.push(line));
  const handler = createHttpHandler({
    services,
    health,
    shutdownSignal: shutdown.signal,
    log,
    cors: { origins: ["https://app.example"], refuseUnlisted: false },
  });
  const server = createOnePortServer(handler, { shutdown, keepAliveTimeoutMs: options.keepAliveTimeoutMs });
  return { server, health, slowCallsStarted, release, internalErrors, logLines };
}

async function start(server: OnePortServer): Promise<string> {
  const { port } = await server.listen(0, "127.0.0.1");
  return `http://127.0.0.1:${port}`;
}

function h2Request(baseUrl: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.on("error", reject);
    const stream = session.request({ ":path": path });
    let status = 0;
    let body = "";
    stream.on("response", (headers) => {
      status = Number(headers[":status"]);
    });
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      body += chunk;
    });
    stream.on("end", () => {
      session.close();
      resolve({ status, body });
    });
    stream.on("error", reject);
  });
}

/**
 * Writes `chunks` on a raw connection, pausing between them, then ends it unless `end` is false, and
 * collects what comes back until the connection closes.
 */
function rawExchange(
  baseUrl: string,
  chunks: (string | Buffer)[],
  pauseMs = 30,
  end = true,
): Promise<Buffer> {
  const { port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), "127.0.0.1");
    const received: Buffer[] = [];
    socket.on("data", (chunk) => received.push(chunk));
    socket.on("error", () => {});
    socket.on("close", () => resolve(Buffer.concat(received)));
    socket.on("connect", async () => {
      for (const chunk of chunks) {
        socket.write(chunk);
        await new Promise((r) => setTimeout(r, pauseMs));
      }
      if (end) socket.end();
    });
  });
}

async function buf(...args: string[]): Promise<string> {
  // A hung buf process fails its test instead of the whole run.
  const { stdout } = await run(BUF, ["curl", ...args], { timeout: 20_000 });
  return stdout;
}

describe("one port: HTTP/1.1, h2c, gRPC, gRPC-Web, Connect and REST", () => {
  let fixture: ReturnType<typeof createFixture>;
  let baseUrl: string;
  let grpc: Transport;

  beforeAll(async () => {
    fixture = createFixture();
    baseUrl = await start(fixture.server);
    grpc = createGrpcTransport({ baseUrl });
  });
  afterAll(async () => {
    await fixture.server.close(100);
    expect(fixture.internalErrors).toEqual([]);
  });

  it("answers REST over HTTP/1.1 with fetch, and JSON 404 for unknown paths", async () => {
    const ok = await fetch(`${baseUrl}/ok`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ ok: true });
    const info = await fetch(`${baseUrl}/info`);
    expect(await info.json()).toMatchObject({ version: "1.2.3", role: "all", flags: { bulk_export: true } });
    const missing = await fetch(`${baseUrl}/nowhere?x=1`, { method: "DELETE" });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toBe("application/json");
    expect(await missing.json()).toEqual({ detail: "no route for DELETE /nowhere" });
  });

  it("answers REST over h2c (prior knowledge) on the same port", async () => {
    const res = await h2Request(baseUrl, "/ok");
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true });
    const missing = await h2Request(baseUrl, "/nowhere");
    expect(missing.status).toBe(404);
  });

  it("serves gRPC over h2c", async () => {
    const health = createClient(Health, grpc);
    expect((await health.check({})).status).toBe(S.SERVING);
    expect((await health.check({ service: SystemService.typeName })).status).toBe(S.SERVING);
    const system = createClient(SystemService, grpc);
    expect(await system.getInfo({})).toMatchObject({ version: "1.2.3", flags: { bulkExport: true } });
  });

  it("serves gRPC-Web and Connect over HTTP/1.1 and Connect over h2c", async () => {
    const transports = [
      createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
      createConnectTransport({ baseUrl, httpVersion: "1.1" }),
      createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
      createConnectTransport({ baseUrl, httpVersion: "2" }),
    ];
    for (const transport of transports) {
      expect((await createClient(Health, transport).check({})).status).toBe(S.SERVING);
      expect((await createClient(SystemService, transport).ok({})).ok).toBe(true);
    }
  });

  it("applies CORS to Connect requests, preflights included", async () => {
    const origin = "https://app.example";
    const preflight = await fetch(`${baseUrl}/grpc.health.v1.Health/Check`, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,connect-protocol-version",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toMatch(/^(https:\/\/app\.example|\*)$/);
    const call = await fetch(`${baseUrl}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { origin, "content-type": "application/json", "connect-protocol-version": "1" },
      body: "{}",
    });
    expect(await call.json()).toEqual({ status: "SERVING" });
    expect(call.headers.get("access-control-allow-origin")).toMatch(/^(https:\/\/app\.example|\*)$/);
  });

  it("reports health: NOT_FOUND for unknown services, List, and Watch with changes", async () => {
    const health = createClient(Health, grpc);
    await expect(health.check({ service: "no.such.Service" })).rejects.toMatchObject({ code: Code.NotFound });
    const list = await health.list({});
    expect(Object.keys(list.statuses).sort()).toEqual(["", Health.typeName, SystemService.typeName].sort());

    const abort = new AbortController();
    const watched = health
      .watch({ service: "later.Service" }, { signal: abort.signal })
      [Symbol.asyncIterator]();
    expect((await watched.next()).value?.status).toBe(S.SERVICE_UNKNOWN);
    fixture.health.set("later.Service", S.SERVING);
    expect((await watched.next()).value?.status).toBe(S.SERVING);
    fixture.health.set("later.Service", S.NOT_SERVING);
    expect((await watched.next()).value?.status).toBe(S.NOT_SERVING);
    abort.abort();
    await expect(watched.next()).rejects.toMatchObject({ code: Code.Canceled });

    // The deadline only bounds a failing test; the watch is returned below.
    const overall = health.watch({}, { signal: AbortSignal.timeout(5_000) })[Symbol.asyncIterator]();
    expect((await overall.next()).value?.status).toBe(S.SERVING);
    fixture.health.setAll(S.NOT_SERVING);
    expect((await overall.next()).value?.status).toBe(S.NOT_SERVING);
    expect((await health.check({ service: SystemService.typeName })).status).toBe(S.NOT_SERVING);
    fixture.health.setAll(S.SERVING);
    expect((await overall.next()).value?.status).toBe(S.SERVING);
    await overall.return?.();
  });

  it("answers gRPC reflection v1: services, files with dependencies, symbols, extensions, errors", async () => {
    const client = createClient(reflectionV1.ServerReflection, grpc);
    // 72295728 is the number of the google.api.http extension of MethodOptions.
    const requests = [
      { messageRequest: { case: "listServices", value: "" } },
      { messageRequest: { case: "fileContainingSymbol", value: "agentplane.system.v1.SystemService.Ok" } },
      // Dependencies already sent on this stream are not sent again.
      { messageRequest: { case: "fileContainingSymbol", value: "agentplane.system.v1.Flags.bulk_export" } },
      { messageRequest: { case: "fileContainingSymbol", value: "no.such.Symbol" } },
      {
        messageRequest: {
          case: "fileContainingSymbol",
          value: "grpc.health.v1.HealthCheckResponse.ServingStatus",
        },
      },
      {
        messageRequest: { case: "fileContainingSymbol", value: "grpc.health.v1.HealthCheckResponse.SERVING" },
      },
      { messageRequest: { case: "fileByFilename", value: "google/protobuf/timestamp.proto" } },
      { messageRequest: { case: "fileContainingSymbol", value: "google.protobuf.Any" } },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 72295728 },
        },
      },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "google.protobuf.MethodOptions" } },
    ] as const;
    async function* send() {
      for (const request of requests) yield request;
    }
    const responses: reflectionV1.ServerReflectionResponse["messageResponse"][] = [];
    for await (const response of client.serverReflectionInfo(send()))
      responses.push(response.messageResponse);

    const fileNames = (r: (typeof responses)[number]) =>
      r.case === "fileDescriptorResponse"
        ? r.value.fileDescriptorProto.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name)
        : r;
    const [list, method, field, unknown, nestedEnum, enumValue, wkt, any, extension, numbers] = responses;
    expect(list?.case === "listServicesResponse" && list.value.service.map((s) => s.name).sort()).toEqual(
      [
        "agentplane.system.v1.SystemService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
      ].sort(),
    );
    expect(fileNames(method!)).toEqual([
      "agentplane/system/v1/system_service.proto",
      "google/api/annotations.proto",
      "google/api/http.proto",
      "google/protobuf/descriptor.proto",
    ]);
    expect(fileNames(field!)).toEqual(["agentplane/system/v1/system_service.proto"]);
    expect(unknown).toMatchObject({ case: "errorResponse", value: { errorCode: Code.NotFound } });
    expect(fileNames(nestedEnum!)).toEqual(["grpc/health/v1/health.proto"]);
    expect(fileNames(enumValue!)).toEqual(["grpc/health/v1/health.proto"]);
    expect(fileNames(wkt!)).toEqual(["google/protobuf/timestamp.proto"]);
    expect(fileNames(any!)).toEqual(["google/protobuf/any.proto"]);
    expect(fileNames(extension!)).toEqual(["google/api/annotations.proto"]);
    expect(numbers).toMatchObject({
      case: "allExtensionNumbersResponse",
      value: { baseTypeName: "google.protobuf.MethodOptions", extensionNumber: [72295728] },
    });
  });

  it("answers gRPC reflection v1alpha", async () => {
    const client = createClient(reflectionV1alpha.ServerReflection, grpc);
    async function* send() {
      yield {
        host: "h",
        messageRequest: { case: "fileByFilename", value: "grpc/health/v1/health.proto" },
      } as const;
      yield { messageRequest: { case: "fileByFilename", value: "missing.proto" } } as const;
    }
    const responses: reflectionV1alpha.ServerReflectionResponse[] = [];
    for await (const response of client.serverReflectionInfo(send())) responses.push(response);
    expect(responses[0]?.validHost).toBe("h");
    expect(responses[0]?.originalRequest?.messageRequest.value).toBe("grpc/health/v1/health.proto");
    expect(responses[0]?.messageResponse.case).toBe("fileDescriptorResponse");
    expect(responses[1]?.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
  });

  it("lists services and calls Health/Check with buf curl over every protocol", async () => {
    const services = (await buf("--list-services", baseUrl)).trim().split("\n").sort();
    expect(services).toEqual(
      [
        "agentplane.system.v1.SystemService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
      ].sort(),
    );
    for (const protocol of ["grpc", "grpcweb", "connect"]) {
      const out = await buf("--protocol", protocol, "-d", "{}", `${baseUrl}/grpc.health.v1.Health/Check`);
      expect(JSON.parse(out)).toEqual({ status: "SERVING" });
    }
    const alpha = await buf(
      "--protocol",
      "grpc",
      "--reflect-protocol",
      "grpc-v1alpha",
      "-d",
      `{"service":"${SystemService.typeName}"}`,
      `${baseUrl}/grpc.health.v1.Health/Check`,
    );
    expect(JSON.parse(alpha)).toEqual({ status: "SERVING" });
    const info = await buf("--protocol", "grpc", `${baseUrl}/agentplane.system.v1.SystemService/GetInfo`);
    expect(JSON.parse(info)).toMatchObject({ version: "1.2.3", flags: { bulkExport: true } });
    await expect(
      buf("--protocol", "grpc", "-d", '{"service":"nope"}', `${baseUrl}/grpc.health.v1.Health/Check`),
    ).rejects.toMatchObject({ stderr: expect.stringContaining("not_found") });
  });

  it("survives connections that close at once, stay silent, or send garbage", async () => {
    expect((await rawExchange(baseUrl, [])).length).toBe(0);
    const garbage = await rawExchange(baseUrl, [Buffer.from([0, 1, 2, 3, 0xff]), "\r\n\r\n"]);
    expect(garbage.toString("latin1")).toMatch(/^HTTP\/1\.1 400 /);
    // A preface followed by junk instead of a SETTINGS frame: the HTTP/2 session ends with GOAWAY.
    const badH2 = await rawExchange(baseUrl, [
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      "not a frame at all, sorry",
    ]);
    expect(badH2.length).toBeGreaterThan(0);
    // A first chunk shorter than the preface that stops matching it later is HTTP/1.1.
    const split = await rawExchange(baseUrl, [
      "P",
      "UT /nowhere HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    ]);
    expect(split.toString("latin1")).toMatch(/^HTTP\/1\.1 404 /);
    // A preface split across chunks is still HTTP/2: the server answers with its SETTINGS frame.
    const emptySettings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
    const splitH2 = await rawExchange(baseUrl, ["PRI * HTTP/2.0\r\n", "\r\nSM\r\n\r\n", emptySettings]);
    expect(splitH2[3]).toBe(4);
    // The server still serves.
    expect((await fetch(`${baseUrl}/ok`)).status).toBe(200);
  });
});

describe("connection lifetime", () => {
  it("advertises its HTTP/2 settings and connection window", async () => {
    const { server } = createFixture();
    const baseUrl = await start(server);
    const session = http2.connect(baseUrl);
    await new Promise<void>((resolve) => session.once("remoteSettings", () => resolve()));
    expect(session.remoteSettings).toMatchObject({ maxConcurrentStreams: 250, initialWindowSize: 1 << 20 });
    // A round trip on the session, so that the server's WINDOW_UPDATE has arrived.
    await new Promise<void>((resolve) => session.request({ ":path": "/ok" }).resume().on("end", resolve));
    expect(session.state.remoteWindowSize).toBe(16 << 20);
    session.close();
    await server.close(100);
  });

  it("closes idle connections after the keep-alive timeout, but never a session with an open stream", async () => {
    const keepAliveMs = 300;
    const { server } = createFixture({ keepAliveTimeoutMs: keepAliveMs });
    const baseUrl = await start(server);
    const began = Date.now();

    const silent = rawExchange(baseUrl, [], 0, false).then(() => Date.now() - began);
    const slowHeaders = rawExchange(baseUrl, ["GET /ok HTTP/1.1\r\n"], 0, false);
    const idleH2 = http2.connect(baseUrl);
    const idleH2Closed = new Promise<number>((resolve) =>
      idleH2.on("close", () => resolve(Date.now() - began)),
    );

    // A Connect server stream (Health/Watch) on a session of its own, open longer than the timeout.
    const busyH2 = http2.connect(baseUrl);
    let goawayAt: number | undefined;
    busyH2.on("goaway", () => {
      goawayAt = Date.now() - began;
    });
    const watch = busyH2.request({
      ":method": "POST",
      ":path": "/grpc.health.v1.Health/Watch",
      "content-type": "application/connect+json",
    });
    const firstMessage = new Promise((resolve) => watch.once("data", resolve));
    watch.end(Buffer.concat([Buffer.from([0, 0, 0, 0, 2]), Buffer.from("{}")]));
    await firstMessage;
    await new Promise((resolve) => setTimeout(resolve, keepAliveMs * 3));
    expect(goawayAt).toBeUndefined();
    const closedStreamAt = Date.now() - began;
    watch.close();
    await new Promise<void>((resolve) => busyH2.on("close", () => resolve()));
    expect(goawayAt).toBeGreaterThanOrEqual(closedStreamAt + keepAliveMs - 50);

    expect(await idleH2Closed).toBeGreaterThanOrEqual(keepAliveMs - 50);
    // The first bytes must arrive within the headers timeout: keep-alive plus one second.
    expect(await silent).toBeGreaterThanOrEqual(keepAliveMs + 1_000 - 50);
    expect((await slowHeaders).toString("latin1")).toMatch(/^HTTP\/1\.1 408 /);
    await server.close(100);
  });
});

describe("graceful shutdown", () => {
  it("lets in-flight calls finish, ends open streams after the grace period, refuses new connections", async () => {
    const { server, slowCallsStarted, release } = createFixture();
    const baseUrl = await start(server);
    const grpc = createGrpcTransport({ baseUrl });
    const connect11 = createConnectTransport({ baseUrl, httpVersion: "1.1" });

    const watch = createClient(Health, grpc).watch({})[Symbol.asyncIterator]();
    expect((await watch.next()).value?.status).toBe(S.SERVING);
    const watchEnd = watch.next().then(
      () => "ended",
      (error: unknown) => ConnectError.from(error).code,
    );
    const unaryGrpc = createClient(SystemService, grpc).ok({ checkDb: true });
    let http1Connection: string | null = null;
    const unaryHttp1 = createClient(SystemService, connect11).ok(
      { checkDb: true },
      {
        onHeader: (headers) => {
          http1Connection = headers.get("connection");
        },
      },
    );
    await slowCallsStarted(2);

    const graceMs = 600;
    const began = Date.now();
    const closed = server.close(graceMs).then(() => Date.now() - began);

    const refused = await new Promise<string>((resolve) => {
      const socket = net.connect(Number(new URL(baseUrl).port), "127.0.0.1");
      socket.on("connect", () => resolve("connected"));
      socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
    });
    expect(refused).toBe("ECONNREFUSED");

    release();
    expect((await unaryGrpc).ok).toBe(true);
    expect((await unaryHttp1).ok).toBe(true);
    // A response finishing during shutdown tells the HTTP/1.1 client not to reuse its connection.
    expect(http1Connection).toBe("close");
    expect(server.shutdownSignal.aborted).toBe(false);

    expect(await watchEnd).toBe(Code.Unavailable);
    const elapsed = await closed;
    expect(server.shutdownSignal.aborted).toBe(true);
    expect(elapsed).toBeGreaterThanOrEqual(graceMs - 50);
    expect(elapsed).toBeLessThan(graceMs + 1_000);
  });

  it("ends REST Server-Sent Event streams after the grace period, over HTTP/1.1 and h2c", async () => {
    const transcoding = createTranscodingService();
    const { server } = createFixture({ extraServices: [transcoding.bound] });
    const baseUrl = await start(server);
    const decoder = new TextDecoder();
    const http1 = await fetch(`${baseUrl}/v1/items:watch?count=1&hold=true`);
    const http1Reader = http1.body!.getReader();
    expect(decoder.decode((await http1Reader.read()).value)).toContain("event: message");
    const session = http2.connect(baseUrl);
    const h2Stream = session.request({ ":path": "/v1/items:watch?count=1&hold=true" });
    await new Promise((resolve) => h2Stream.once("data", resolve));
    const h2Ended = new Promise<void>((resolve) => h2Stream.on("end", () => resolve()).resume());

    const graceMs = 300;
    const began = Date.now();
    const closed = server.close(graceMs);
    let rest = "";
    for (let chunk = await http1Reader.read(); !chunk.done; chunk = await http1Reader.read()) {
      rest += decoder.decode(chunk.value);
    }
    await h2Ended;
    expect(Date.now() - began).toBeGreaterThanOrEqual(graceMs - 50);
    expect(rest).not.toContain("event: error");
    await closed;
    expect(Date.now() - began).toBeLessThan(graceMs + 1_000);
    expect(transcoding.probe.watchFinished).toEqual([{ aborted: true }, { aborted: true }]);
  });

  it("does not wait for idle keep-alive connections (HTTP/1.1 and HTTP/2)", async () => {
    const { server } = createFixture();
    const baseUrl = await start(server);
    // fetch keeps its HTTP/1.1 connection alive after the response.
    expect((await fetch(`${baseUrl}/ok`)).status).toBe(200);
    const session = http2.connect(baseUrl);
    const sessionClosed = new Promise<void>((resolve) => session.on("close", () => resolve()));
    await new Promise<void>((resolve, reject) => {
      const stream = session.request({ ":path": "/ok" });
      stream.on("error", reject);
      stream.resume();
      stream.on("end", () => resolve());
    });

    const began = Date.now();
    await server.close(10_000);
    expect(Date.now() - began).toBeLessThan(1_000);
    expect(server.shutdownSignal.aborted).toBe(false);
    await sessionClosed;
  });

  it("resolves close on a server that never listened, and returns the same promise twice", async () => {
    const { server } = createFixture();
    const first = server.close(10);
    expect(server.close(10)).toBe(first);
    await first;
  });
});
