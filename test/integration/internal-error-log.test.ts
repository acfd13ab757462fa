/**
 * Internal errors (bugs, outages) are logged once each, as one JSON line through server/logger.ts
 * with the error's name, message and stack as fields and the RPC or route they happened on; nothing
 * goes to stderr raw (connect-node's adapter used `console.error`), and the client sees only
 * "internal error". Driven over REST, Connect and gRPC, and through a REST-only adapter, on the same
 * handler the server uses, with the same reporter shape the composition root (app.ts) binds.
 */
import { Code, ConnectError, createClient, type ServiceImpl } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { SystemService } from "../../gen/agentplane/system/v1/system_service_pb.js";
import { createLogger } from "../../server/logger.js";
import { bindService } from "../../server/transport/bound-service.js";
import { createHealthRegistry } from "../../server/transport/health.js";
import { bindAdapter } from "../../server/transport/http-adapter.js";
import { createHttpHandler } from "../../server/transport/http-handler.js";
import { createOnePortServer, type OnePortServer } from "../../server/transport/one-port-server.js";

/** What a bug says: it must reach the log and never the client. */
const SECRET = "SELECT secret FROM credentials failed at db.ts:42";

let server: OnePortServer;
let baseUrl: string;
const lines: string[] = [];

beforeAll(async () => {
  const log = createLogger("info", (line) => lines.push(line));
  const impl: ServiceImpl<typeof SystemService> = {
    ok() {
      throw new Error(SECRET, {
        cause: Object.assign(new Error("connection reset"), { code: "ECONNRESET" }),
      });
    },
    getInfo: () => ({ version: "1", role: "all" }),
  };
  const system = bindService(SystemService, impl, {
    onInternalError: (error, ctx) =>
      log.error("request failed", { error, rpc: `${ctx.service.typeName}/${ctx.method.name}` }),
  });
  const shutdown = new AbortController();
  const broken = bindAdapter([{ methods: ["GET"], path: "/broken/{name}" }] as const, {
    "/broken/{name}": async () => {
      throw new TypeError(SECRET);
    },
  });
  server = createOnePortServer(
    createHttpHandler({
      services: [system],
      health: createHealthRegistry([SystemService.typeName]),
      shutdownSignal: shutdown.signal,
      adapters: [broken],
      log,
    }),
    { shutdown },
  );
  const { port } = await server.listen(0, "127.0.0.1");
  baseUrl = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await server?.close(1_000);
});

afterEach(() => {
  lines.length = 0;
  vi.restoreAllMocks();
});

interface LogLine {
  level: string;
  message: string;
  rpc?: string;
  route?: string;
  error: { name: string; message: string; stack: string; cause?: { message: string; code: string } };
}

function parsed(): LogLine[] {
  return lines.map((line) => {
    expect(line.endsWith("\n") && !line.slice(0, -1).includes("\n")).toBe(true);
    return JSON.parse(line) as LogLine;
  });
}

describe("an internal error", () => {
  it.each([
    ["REST", () => fetch(`${baseUrl}/ok`).then(async (res) => [res.status, await res.text()] as const)],
    [
      "Connect",
      () =>
        createClient(SystemService, createConnectTransport({ baseUrl, httpVersion: "1.1" }))
          .ok({})
          .then(
            () => [200, ""] as const,
            (e: unknown) => [ConnectError.from(e).code, ConnectError.from(e).rawMessage] as const,
          ),
    ],
    [
      "gRPC",
      () =>
        createClient(SystemService, createGrpcTransport({ baseUrl }))
          .ok({})
          .then(
            () => [200, ""] as const,
            (e: unknown) => [ConnectError.from(e).code, ConnectError.from(e).rawMessage] as const,
          ),
    ],
  ])(
    "over %s is one JSON log line with the error and the RPC, and only 'internal error' to the client",
    async (protocol, call) => {
      const stderr = vi.spyOn(process.stderr, "write");
      const consoleError = vi.spyOn(console, "error");
      const [status, body] = await call();
      if (protocol === "REST") expect([status, body]).toEqual([500, '{"detail":"internal error"}']);
      else expect([status, body]).toEqual([Code.Internal, "internal error"]);
      const [line, ...more] = parsed();
      expect(more).toEqual([]);
      expect(line).toMatchObject({
        level: "error",
        message: "request failed",
        rpc: "agentplane.system.v1.SystemService/Ok",
        error: { name: "Error", message: SECRET, cause: { message: "connection reset", code: "ECONNRESET" } },
      });
      expect(line?.error.stack).toContain("internal-error-log.test.ts");
      expect(stderr).not.toHaveBeenCalled();
      expect(consoleError).not.toHaveBeenCalled();
    },
  );

  it("in a REST-only adapter is one JSON log line naming the route, and a 500 without details", async () => {
    const res = await fetch(`${baseUrl}/broken/x`);
    expect([res.status, await res.text()]).toEqual([500, '{"detail":"internal error"}']);
    const [line, ...more] = parsed();
    expect(more).toEqual([]);
    expect(line).toMatchObject({
      level: "error",
      route: "GET /broken/{name}",
      error: { name: "TypeError", message: SECRET },
    });
  });
});
