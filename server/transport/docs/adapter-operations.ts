import { LOG_LEVELS } from "../../config.js";
import type { JsonSchema } from "./message-schema.js";

/**
 * How the OpenAPI document describes the REST-only routes (server/transport/*-adapter.ts), which
 * have no proto messages to derive schemas from. Keyed by `METHOD path` as the adapters declare
 * them; a route missing here is still listed, with a generic description, so the document never
 * leaves a served route out.
 */
export interface AdapterOperation {
  /** One line. */
  readonly summary: string;
  /** More, in CommonMark. */
  readonly description?: string;
  /** The OpenAPI tag it is listed under. */
  readonly tag: string;
  /** False for routes that answer without an API key; undefined when not stated. */
  readonly authenticated: boolean | undefined;
  /** The request body's media types and schemas. */
  readonly requestBody?: Readonly<Record<string, JsonSchema>>;
  /** Query parameters: those of this RPC route (`METHOD path`), which the route reads the same way. */
  readonly queryLike?: string;
  /** The success status and its media types with schemas; undefined when not stated. */
  readonly success:
    | { readonly status: string; readonly content: Readonly<Record<string, JsonSchema>> }
    | undefined;
}

const INGEST_TAG = "Trace ingest (LangSmith-compatible)";
const PAGES_TAG = "Web pages";
const SYSTEM_TAG = "Operations";
const AGENT_PROTOCOLS_TAG = "A2A and MCP";
const UI_TAG = "Generative UI";

/** A run as the LangSmith SDK sends it; the server validates it field by field. */
const RUN_BODY: JsonSchema = {
  type: "object",
  description:
    "A run as the `langsmith` SDK sends it (`id`, `trace_id`, `dotted_order`, `name`, `run_type`, " +
    "`start_time`, `inputs`, ...). The body may be gzip-compressed (`Content-Encoding: gzip`).",
  additionalProperties: true,
};
const ACCEPTED: AdapterOperation["success"] = {
  status: "202",
  content: { "application/json": { type: "object", description: "Always `{}`." } },
};
const STATIC = (type: string): AdapterOperation["success"] => ({
  status: "200",
  content: { [type]: { type: "string" } },
});

/** A log level, as `AGENTPLANE_LOG_LEVEL` takes it. */
const LOG_LEVEL_SCHEMA: JsonSchema = { type: "string", enum: [...LOG_LEVELS] };
const LOG_LEVEL_ANSWER: JsonSchema = { type: "object", properties: { level: LOG_LEVEL_SCHEMA } };

/** The descriptions, by `METHOD path`. */
export const ADAPTER_OPERATIONS: ReadonlyMap<string, AdapterOperation> = new Map<string, AdapterOperation>([
  [
    "GET /api/v1/info",
    {
      summary: "Server information for the LangSmith SDK",
      tag: INGEST_TAG,
      authenticated: false,
      success: { status: "200", content: { "application/json": { type: "object" } } },
    },
  ],
  [
    "POST /api/v1/runs/multipart",
    {
      summary: "Ingest a batch of runs (multipart, the SDK's default)",
      description:
        "Parts named `post.<run id>` and `patch.<run id>` hold a run as JSON; `post.<run id>.inputs`, " +
        "`.outputs`, `.events` and the like hold one of its fields. The body may be gzip-compressed.",
      tag: INGEST_TAG,
      authenticated: true,
      requestBody: { "multipart/form-data": { type: "object", additionalProperties: true } },
      success: ACCEPTED,
    },
  ],
  [
    "POST /api/v1/runs/batch",
    {
      summary: "Ingest a batch of runs (JSON)",
      tag: INGEST_TAG,
      authenticated: true,
      requestBody: {
        "application/json": {
          type: "object",
          properties: { post: { type: "array", items: RUN_BODY }, patch: { type: "array", items: RUN_BODY } },
        },
      },
      success: ACCEPTED,
    },
  ],
  [
    "POST /api/v1/runs",
    {
      summary: "Ingest one run",
      tag: INGEST_TAG,
      authenticated: true,
      requestBody: { "application/json": RUN_BODY },
      success: ACCEPTED,
    },
  ],
  [
    "PATCH /api/v1/runs/{run_id}",
    {
      summary: "Update one run (its end, outputs or error)",
      tag: INGEST_TAG,
      authenticated: true,
      requestBody: { "application/json": RUN_BODY },
      success: ACCEPTED,
    },
  ],
  [
    "GET /api/v1/orgs/current/billing/granular-usage/export",
    {
      summary: "Granular usage as a CSV download",
      description:
        "The same query parameters and validation as the JSON route; one row per time bucket and group, " +
        "with every column always present.",
      tag: "tracing.v1.UsageService",
      authenticated: true,
      queryLike: "GET /api/v1/orgs/current/billing/granular-usage",
      success: { status: "200", content: { "text/csv": { type: "string" } } },
    },
  ],
  [
    "GET /metrics",
    {
      summary: "Prometheus metrics of the process that answers",
      description:
        "The text exposition format (`?format=json` for JSON): runs, queues, workers, streams, HTTP " +
        "requests, ingest, export partitions and the Postgres pool. No label names a workspace.",
      tag: SYSTEM_TAG,
      authenticated: false,
      success: { status: "200", content: { "text/plain": { type: "string" } } },
    },
  ],
  [
    "POST /internal/heapdump",
    {
      summary: "Write a V8 heap snapshot of the answering process into the data directory",
      description: "For an admin of the installation's organization; the process pauses while it writes.",
      tag: SYSTEM_TAG,
      authenticated: true,
      success: {
        status: "200",
        content: { "application/json": { type: "object", properties: { path: { type: "string" } } } },
      },
    },
  ],
  [
    "GET /internal/log-level",
    {
      summary: "The log level of the answering process",
      description: "For an admin of the installation's organization.",
      tag: SYSTEM_TAG,
      authenticated: true,
      success: { status: "200", content: { "application/json": LOG_LEVEL_ANSWER } },
    },
  ],
  [
    "PUT /internal/log-level",
    {
      summary: "Change the log level of the answering process until it stops",
      description:
        "For an admin of the installation's organization. `info` and `debug` write the access log; " +
        "each process has its own level (`AGENTPLANE_LOG_LEVEL` sets it at start).",
      tag: SYSTEM_TAG,
      authenticated: true,
      requestBody: {
        "application/json": {
          type: "object",
          properties: { level: LOG_LEVEL_SCHEMA },
          required: ["level"],
          additionalProperties: false,
        },
      },
      success: {
        status: "200",
        content: {
          "application/json": {
            type: "object",
            properties: { level: LOG_LEVEL_SCHEMA, previous: LOG_LEVEL_SCHEMA },
          },
        },
      },
    },
  ],
  [
    "GET /.well-known/agent-card.json",
    {
      summary: "The A2A agent card of an assistant (`?assistant_id=`)",
      tag: AGENT_PROTOCOLS_TAG,
      authenticated: true,
      success: { status: "200", content: { "application/json": { type: "object" } } },
    },
  ],
  [
    "POST /a2a/{assistant_id}",
    {
      summary: "A2A JSON-RPC 2.0 (protocol 0.3): message/send, message/stream, tasks/get, tasks/cancel",
      description:
        "A context is a thread, a task is a run; `message/stream` answers Server-Sent Events of JSON-RPC " +
        "envelopes (send `Accept: text/event-stream`).",
      tag: AGENT_PROTOCOLS_TAG,
      authenticated: true,
      requestBody: { "application/json": { type: "object" } },
      success: {
        status: "200",
        content: { "application/json": { type: "object" }, "text/event-stream": { type: "string" } },
      },
    },
  ],
  [
    "POST /mcp",
    {
      summary: "MCP over streamable HTTP: each assistant of the workspace is a tool",
      tag: AGENT_PROTOCOLS_TAG,
      authenticated: true,
      requestBody: { "application/json": { type: "object" } },
      success: { status: "200", content: { "application/json": { type: "object" } } },
    },
  ],
  [
    "POST /ui/{assistant_id}",
    {
      summary: "The HTML that loads a generative-UI component (what `LoadExternalComponent` inserts)",
      description:
        "`assistant_id` is an assistant's UUID (its graph's `ui` entry applies), a graph id or a `ui` key; " +
        'the body names the component: `{"name": "weather"}`.',
      tag: UI_TAG,
      authenticated: true,
      requestBody: {
        "application/json": { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
      },
      success: STATIC("text/html"),
    },
  ],
  [
    "GET /ui/{name}/{file}",
    {
      summary: "A file of a generative-UI bundle (`entrypoint.js`, `entrypoint.css`)",
      tag: UI_TAG,
      authenticated: false,
      success: {
        status: "200",
        content: { "text/javascript": { type: "string" }, "text/css": { type: "string" } },
      },
    },
  ],
  [
    "GET /settings/billing/usage",
    {
      summary: "The Granular Usage web page",
      description: "It asks for an API key in the browser and reads the usage API with it.",
      tag: PAGES_TAG,
      authenticated: false,
      success: STATIC("text/html"),
    },
  ],
]);

/** Media types of static files by extension. */
const STATIC_TYPES: ReadonlyMap<string, string> = new Map([
  ["css", "text/css"],
  ["js", "text/javascript"],
  ["json", "application/json"],
  ["html", "text/html"],
]);

/**
 * What a REST-only route without an entry in {@link ADAPTER_OPERATIONS} is described as: a static
 * file (public) when its path names one by extension, otherwise just its method and path.
 */
export function genericAdapterOperation(method: string, path: string): AdapterOperation {
  const type = STATIC_TYPES.get(/\.([a-z]+)$/.exec(path)?.[1] ?? "");
  if (type)
    return { summary: `${method} ${path}`, tag: PAGES_TAG, authenticated: false, success: STATIC(type) };
  return { summary: `${method} ${path}`, tag: "Other", authenticated: undefined, success: undefined };
}
