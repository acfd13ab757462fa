/**
 * Unary gRPC through the whole server, where the fast path (server/transport/grpc/) serves it: the
 * connect-node gRPC client and `buf curl --protocol grpc` get the answers REST gives, gzip works both
 * ways, errors keep their codes, an unknown method is UNIMPLEMENTED, and the request id and the
 * access log's workspace are still filled in.
 */
import { execFile } from "node:child_process";
import { connect } from "node:http2";
import { promisify } from "node:util";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { compressionGzip, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdentityService } from "../../gen/agentplane/iam/v1/identity_service_pb.js";
import { WorkspaceService } from "../../gen/agentplane/iam/v1/workspace_service_pb.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const run = promisify(execFile);
const BUF = "node_modules/.bin/buf";
/** Generous for a loaded machine: buf starts a Go binary. */
const BUF_TIMEOUT_MS = 20_000;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.stop());

function grpcClient<T extends Parameters<typeof createClient>[0]>(service: T, gzip = false) {
  return createClient(
    service,
    createGrpcTransport({
      baseUrl: t.baseUrl,
      ...(gzip ? { sendCompression: compressionGzip, compressMinBytes: 1 } : {}),
      interceptors: [
        (next) => (req) => {
          req.header.set("x-api-key", t.adminKey);
          return next(req);
        },
      ],
    }),
  );
}

describe("unary gRPC through the server", () => {
  it("answers Whoami as REST does, with and without gzip", async () => {
    const rest = (await (await t.fetch("/api/v1/whoami")).json()) as { organization: { id: string } };
    for (const gzip of [false, true]) {
      const me = await grpcClient(IdentityService, gzip).whoami({});
      expect(me.organization?.id, `gzip ${gzip}`).toBe(rest.organization.id);
    }
  });

  it("answers buf curl --protocol grpc, and errors with their codes", async () => {
    const { stdout } = await run(
      BUF,
      [
        "curl",
        "--protocol",
        "grpc",
        "-H",
        `x-api-key: ${t.adminKey}`,
        `${t.baseUrl}/agentplane.iam.v1.IdentityService/Whoami`,
      ],
      { timeout: BUF_TIMEOUT_MS },
    );
    expect(JSON.parse(stdout)).toMatchObject({ organization: { displayName: "Default organization" } });
    const refused = await run(
      BUF,
      [
        "curl",
        "--protocol",
        "grpc",
        "-H",
        "x-api-key: ap_pt_nope",
        `${t.baseUrl}/agentplane.iam.v1.IdentityService/Whoami`,
      ],
      { timeout: BUF_TIMEOUT_MS },
    ).catch((error: { stderr: string; stdout: string }) => error);
    // buf prints the error as JSON on stderr and exits non-zero.
    expect(JSON.parse((refused as { stderr: string }).stderr)).toMatchObject({ code: "unauthenticated" });
  });

  it("refuses bad input with INVALID_ARGUMENT naming the field", async () => {
    const error = await grpcClient(WorkspaceService)
      .createWorkspace({ displayName: "a\u0000b" })
      .catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toContain("display_name");
  });

  it("answers an unknown method with HTTP 404, which gRPC clients read as UNIMPLEMENTED", async () => {
    const answer = await rawGrpc("/agentplane.iam.v1.IdentityService/Nope", { "x-api-key": t.adminKey });
    expect(answer.headers[":status"]).toBe(404);
    expect(answer.grpcStatus).toBe(String(Code.Unimplemented));
  });

  it("echoes the request id on a gRPC answer", async () => {
    const answer = await rawGrpc("/agentplane.iam.v1.IdentityService/Whoami", {
      "x-api-key": t.adminKey,
      "x-request-id": "grpc-fast-1",
    });
    expect(answer.grpcStatus).toBe("0");
    expect(answer.headers["x-request-id"]).toBe("grpc-fast-1");
  });
});

/** One gRPC call over raw HTTP/2 with an empty message; the status from the trailers or a trailers-only answer. */
async function rawGrpc(
  path: string,
  headers: Record<string, string>,
): Promise<{ headers: Record<string, unknown>; grpcStatus: string | undefined }> {
  const session = connect(t.baseUrl);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
        ...headers,
      });
      let answer: Record<string, unknown> = {};
      let trailers: Record<string, unknown> = {};
      stream.on("response", (h) => {
        answer = h;
      });
      stream.on("trailers", (h) => {
        trailers = h;
      });
      stream.resume();
      stream.on("end", () => {
        const status = trailers["grpc-status"] ?? answer["grpc-status"];
        // An HTTP error status stands for a gRPC code as the gRPC spec maps it (404 → UNIMPLEMENTED).
        const fromHttp = answer[":status"] === 404 ? String(Code.Unimplemented) : undefined;
        resolve({ headers: answer, grpcStatus: status === undefined ? fromHttp : String(status) });
      });
      stream.on("error", reject);
      stream.end(new Uint8Array(5));
    });
  } finally {
    session.close();
  }
}
