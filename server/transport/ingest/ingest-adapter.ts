/**
 * The LangSmith-compatible trace ingest routes (REST-only: multipart bodies are not RPCs), under
 * `/api/v1` where the SDK goes with `LANGSMITH_ENDPOINT=http://host:port/api/v1`:
 *
 * - `GET /api/v1/info`: server info (no key needed; the SDK sends one anyway)
 * - `POST /api/v1/runs/multipart`: the SDK's default batch endpoint
 * - `POST /api/v1/runs/batch`: `{post: [...], patch: [...]}` (the SDK's fallback)
 * - `POST /api/v1/runs`, `PATCH /api/v1/runs/{run_id}`: one run (SDK without auto-batching)
 *
 * Bodies may be gzip-compressed (`Content-Encoding: gzip`). Success is 202 `{}`; errors are
 * `{"detail": ...}`. Not served at the root: the Agent Server API owns `/runs/...` there.
 */
import type { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../../ids.js";
import type { Logger } from "../../logger.js";
import type { Authenticator } from "../../services/iam/authenticator.js";
import { workspacePermissions } from "../../services/iam/permissions.js";
import type { IngestActor, IngestBatch, IngestService } from "../../tracing/ingest-service.js";
import type { RunInput } from "../../tracing/run-normalizer.js";
import type { HttpAdapter } from "../http-handler.js";
import {
  malformedRequestError,
  payloadTooLargeError,
  unsupportedEncodingError,
  writeConnectError,
  writeRestError,
} from "../rest/http-status.js";
import type { NodeServerRequest, NodeServerResponse } from "../rest/node-types.js";
import { maxRequestBodyBytes, readJsonBody } from "../rest/request-body.js";
import { batchFromParts } from "./multipart-batch.js";
import { boundaryOf, MultipartError, parseMultipart } from "./multipart-parser.js";
import { serverInfo } from "./server-info.js";

/** Dependencies of {@link createIngestAdapter}. */
export interface IngestAdapterDeps {
  ingest: IngestService;
  auth: Authenticator;
  log: Logger;
  /** agentplane's version, reported by `/info`. */
  version: string;
}

const PREFIX = "/api/v1";
const RUN_PATH = /^\/api\/v1\/runs\/([^/]+)\/?$/;

/** Creates the ingest routes' adapter. */
export function createIngestAdapter(deps: IngestAdapterDeps): HttpAdapter {
  const info = JSON.stringify(serverInfo(deps.version));

  const ingestFrom = async (
    req: NodeServerRequest,
    res: NodeServerResponse,
    read: () => Promise<IngestBatch>,
  ) => {
    const actor = await authorize(deps.auth, req);
    await deps.ingest.ingestRuns(actor, await read());
    sendJson(res, 202, "{}");
  };

  return async (req, res) => {
    const url = req.url ?? "/";
    if (!url.startsWith(PREFIX)) return false;
    const path = url.split("?", 1)[0] ?? url;
    const method = req.method ?? "GET";
    let handle: (() => Promise<void>) | undefined;
    if (method === "GET" && (path === "/api/v1/info" || path === "/api/v1/info/")) {
      handle = async () => sendJson(res, 200, info);
    } else if (
      method === "POST" &&
      (path === "/api/v1/runs/multipart" || path === "/api/v1/runs/multipart/")
    ) {
      handle = () => ingestFrom(req, res, () => readMultipart(req));
    } else if (method === "POST" && (path === "/api/v1/runs/batch" || path === "/api/v1/runs/batch/")) {
      handle = () => ingestFrom(req, res, () => readBatch(req));
    } else if (method === "POST" && (path === "/api/v1/runs" || path === "/api/v1/runs/")) {
      handle = () => ingestFrom(req, res, async () => ({ post: [await readRun(req)] }));
    } else if (method === "PATCH" && RUN_PATH.test(path)) {
      const id = decodeURIComponent(RUN_PATH.exec(path)?.[1] ?? "");
      handle = () =>
        ingestFrom(req, res, async () => {
          if (!isUuid(id))
            throw new ConnectError(`run id "${id}" in the path must be a UUID`, Code.InvalidArgument);
          return { patch: [{ ...(await readRun(req)), id }] };
        });
    }
    if (!handle) return false;
    try {
      await handle();
    } catch (error) {
      answerError(res, req, error, deps.log);
    }
    return true;
  };
}

/** The actor of an ingest request: its workspace, when the key holds `runs:create` there. */
async function authorize(auth: Authenticator, req: NodeServerRequest): Promise<IngestActor> {
  const principal = await auth.authenticate(headersOf(req));
  const workspace = await principal.workspace();
  if (!workspacePermissions(workspace.role).includes("runs:create")) {
    throw new ConnectError(
      "permission denied: sending traces needs the runs:create permission",
      Code.PermissionDenied,
    );
  }
  return {
    workspaceId: workspace.id,
    userId: principal.user?.id ?? null,
    apiKeyId: principal.apiKey?.id ?? null,
  };
}

async function readMultipart(req: NodeServerRequest): Promise<IngestBatch> {
  const header = req.headers["content-type"];
  const boundary = boundaryOf(Array.isArray(header) ? header[0] : header);
  const body = decodedBody(req);
  try {
    return batchFromParts(await parseMultipart(body, boundary, { maxBytes: maxRequestBodyBytes }));
  } catch (error) {
    // Read and drop the rest, so the answer reaches the client on a healthy connection.
    if (body !== req) req.unpipe();
    req.resume();
    const code = (error as NodeJS.ErrnoException).code;
    if (code?.startsWith("Z_")) throw malformedRequestError("the request body is not valid gzip data");
    if (code === "ECONNRESET" || (error as Error).message === "aborted")
      throw new ConnectError("the request body was not fully received", Code.Canceled);
    throw error;
  }
}

async function readBatch(req: NodeServerRequest): Promise<IngestBatch> {
  const body = await readJsonBody(req);
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new ConnectError(
      'the body must be a JSON object {"post": [...], "patch": [...]}',
      Code.InvalidArgument,
    );
  const { post, patch } = body as { post?: unknown; patch?: unknown };
  for (const [name, list] of [
    ["post", post],
    ["patch", patch],
  ] as const) {
    if (list !== undefined && list !== null && !Array.isArray(list))
      throw new ConnectError(`"${name}" must be an array of runs`, Code.InvalidArgument);
  }
  return { post: (post ?? []) as RunInput[], patch: (patch ?? []) as RunInput[] };
}

async function readRun(req: NodeServerRequest): Promise<RunInput> {
  const body = await readJsonBody(req);
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new ConnectError("the body must be a run as a JSON object", Code.InvalidArgument);
  return body as RunInput;
}

/** The request body, gunzipped when `Content-Encoding: gzip`. */
function decodedBody(req: NodeServerRequest): AsyncIterable<Uint8Array> {
  const encoding = req.headers["content-encoding"]?.trim().toLowerCase();
  if (encoding === undefined || encoding === "identity") return req;
  if (encoding === "gzip" || encoding === "x-gzip") return (req as Readable).pipe(createGunzip());
  throw unsupportedEncodingError(
    `Content-Encoding "${encoding}" is not supported; send the body uncompressed or with gzip`,
  );
}

function answerError(res: NodeServerResponse, req: NodeServerRequest, error: unknown, log: Logger): void {
  if (error instanceof MultipartError) {
    const connectError =
      error.kind === "too-large"
        ? payloadTooLargeError(error.message)
        : new ConnectError(error.message, Code.InvalidArgument);
    writeConnectError(res, connectError);
  } else if (error instanceof ConnectError) {
    writeConnectError(res, error);
  } else {
    log.error("trace ingest failed", { error, method: req.method, path: req.url });
    writeRestError(res, 500, "internal error");
  }
  if (!req.readableEnded) req.resume();
}

function headersOf(req: NodeServerRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  return headers;
}

function sendJson(res: NodeServerResponse, status: number, json: string): void {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
  res.end(json);
}
