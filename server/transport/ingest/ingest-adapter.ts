/**
 * The LangSmith-compatible trace ingest routes (REST-only: multipart bodies are not RPCs), under
 * `/api/v1` where the SDK goes with `LANGSMITH_ENDPOINT=http://host:port/api/v1`:
 *
 * - `GET /api/v1/info`: server info (no key needed; the SDK sends one anyway)
 * - `POST /api/v1/runs/multipart`: the SDK's default batch endpoint
 * - `POST /api/v1/runs/batch`: `{post: [...], patch: [...]}` (the SDK's fallback)
 * - `POST /api/v1/runs`, `PATCH /api/v1/runs/{run_id}`: one run (SDK without auto-batching)
 *
 * Bodies may be compressed (`Content-Encoding: gzip` or `zstd`). Success is 202 `{}`; errors are
 * `{"detail": ...}`. Not served at the root: the Agent Server API owns `/runs/...` there.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../../ids.js";
import type { Authenticator } from "../../services/iam/authenticator.js";
import { workspacePermissions } from "../../services/iam/permissions.js";
import type { IngestActor, IngestBatch, IngestService } from "../../tracing/ingest-service.js";
import type { RunInput } from "../../tracing/run-normalizer.js";
import { maxRequestBodyBytes } from "../body/body-limit.js";
import { readJsonBody } from "../body/json-body.js";
import { requestBytes } from "../body/request-body.js";
import { type AdapterRoute, bindAdapter, type HttpAdapter } from "../http-adapter.js";
import { requestHeaders, requestTarget } from "../request-headers.js";
import { payloadTooLargeError } from "../rest/http-status.js";
import type { NodeServerRequest, NodeServerResponse } from "../rest/node-types.js";
import { batchFromParts } from "./multipart-batch.js";
import { boundaryOf, MultipartError } from "./multipart-parser.js";
import { parseMultipartBody } from "./sdk-multipart.js";
import { serverInfo } from "./server-info.js";

/** Dependencies of {@link createIngestAdapter}. */
export interface IngestAdapterDeps {
  ingest: IngestService;
  auth: Authenticator;
}

/** The ingest routes (a trailing `/` is accepted too, as the SDKs sometimes send one). */
export const INGEST_ROUTES = [
  { methods: ["GET"], path: "/api/v1/info" },
  { methods: ["POST"], path: "/api/v1/runs/multipart" },
  { methods: ["POST"], path: "/api/v1/runs/batch" },
  { methods: ["POST"], path: "/api/v1/runs" },
  { methods: ["PATCH"], path: "/api/v1/runs/{run_id}" },
] as const satisfies readonly AdapterRoute[];

/** Creates the ingest routes' adapter. */
export function createIngestAdapter(deps: IngestAdapterDeps): HttpAdapter {
  const info = JSON.stringify(serverInfo());

  const ingestFrom = async (
    req: NodeServerRequest,
    res: NodeServerResponse,
    read: () => Promise<IngestBatch>,
  ): Promise<void> => {
    const actor = await authorize(deps.auth, req);
    await deps.ingest.ingestRuns(actor, await read());
    sendJson(res, 202, "{}");
  };

  return bindAdapter(INGEST_ROUTES, {
    "/api/v1/info": async (_req, res) => sendJson(res, 200, info),
    "/api/v1/runs/multipart": (req, res) => ingestFrom(req, res, () => readMultipart(req)),
    "/api/v1/runs/batch": (req, res) => ingestFrom(req, res, () => readBatch(req)),
    "/api/v1/runs": (req, res) => ingestFrom(req, res, async () => ({ post: [await readRun(req)] })),
    "/api/v1/runs/{run_id}": (req, res, { vars }) => {
      const id = vars.run_id ?? "";
      return ingestFrom(req, res, async () => {
        if (!isUuid(id))
          throw new ConnectError(
            `run id ${JSON.stringify(id)} in the path must be a UUID`,
            Code.InvalidArgument,
          );
        return { patch: [{ ...(await readRun(req)), id }] };
      });
    },
  });
}

/** The actor of an ingest request: its workspace, when the key holds `runs:create` there. */
async function authorize(auth: Authenticator, req: NodeServerRequest): Promise<IngestActor> {
  const principal = await auth.authenticate(requestHeaders(req), requestTarget(req));
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
  try {
    const boundary = boundaryOf(Array.isArray(header) ? header[0] : header);
    // The whole body at once: its parts are then views of one buffer, never joined across chunks.
    const body = await requestBytes(req);
    return batchFromParts(await parseMultipartBody(body, boundary, { maxBytes: maxRequestBodyBytes }));
  } catch (error) {
    if (!(error instanceof MultipartError)) throw error;
    throw error.kind === "too-large"
      ? payloadTooLargeError(error.message)
      : new ConnectError(error.message, Code.InvalidArgument);
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

function sendJson(res: NodeServerResponse, status: number, json: string): void {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
  res.end(json);
}
