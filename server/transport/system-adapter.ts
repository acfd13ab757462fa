import type { JsonValue } from "@bufbuild/protobuf";
import type { Authenticator } from "../services/iam/authenticator.js";
import { invalid, oneOf } from "../services/request-validation.js";
import { type AppMetrics, METRICS_FORMATS } from "../services/system/app-metrics.js";
import type { HeapDumper } from "../services/system/heap-dump.js";
import type { LogLevelControl } from "../services/system/log-level-control.js";
import { readJsonBody } from "./body/json-body.js";
import { type AdapterRoute, bindAdapter, type HttpAdapter } from "./http-adapter.js";
import { requestHeaders, requestTarget } from "./request-headers.js";
import { parseQuery } from "./rest/query-string.js";

/** Where Prometheus scrapes; `?format=json` answers the same metrics as JSON. */
export const METRICS_PATH = "/metrics";
/** Where an administrator asks for a heap snapshot of the process that answers. */
export const HEAP_DUMP_PATH = "/internal/heapdump";

/** Where an administrator reads and changes the log level of the process that answers. */
export const LOG_LEVEL_PATH = "/internal/log-level";

/** `GET /metrics`, served by every process whatever its role. */
export const METRICS_ROUTES = [
  { methods: ["GET"], path: METRICS_PATH },
] as const satisfies readonly AdapterRoute[];
/** `POST /internal/heapdump`, served by every process whatever its role. */
export const HEAP_DUMP_ROUTES = [
  { methods: ["POST"], path: HEAP_DUMP_PATH },
] as const satisfies readonly AdapterRoute[];

/** `GET` and `PUT /internal/log-level`, served by every process whatever its role. */
export const LOG_LEVEL_ROUTES = [
  { methods: ["GET", "PUT"], path: LOG_LEVEL_PATH },
] as const satisfies readonly AdapterRoute[];

/**
 * `GET /metrics` answers without an API key, like `/ok` and `/info` (and LangGraph's `/metrics`): a
 * scraper holds no tenant's credentials, and the metrics name no workspace, only routes, queues and
 * statuses. It answers during a Postgres outage too (the gauges read from Postgres are then absent
 * and `agentplane_metrics_database_up` is 0), when the process's own metrics matter most.
 */
export function createMetricsAdapter(metrics: AppMetrics): HttpAdapter {
  return bindAdapter(METRICS_ROUTES, {
    [METRICS_PATH]: async (_req, res, { query }) => {
      const requested = queryParams(query, ["format"]).get("format");
      const { contentType, body } = await metrics.render(
        oneOf(requested, METRICS_FORMATS, "format", "prometheus"),
      );
      res.writeHead(200, {
        "content-type": contentType,
        "content-length": Buffer.byteLength(body),
        "cache-control": "no-store",
      });
      res.end(body);
    },
  });
}

/**
 * `POST /internal/heapdump` writes a heap snapshot of the process that answers and returns
 * `{"path"}`; it needs an admin key of the installation's organization (403 otherwise).
 */
export function createHeapDumpAdapter(deps: { heapDumper: HeapDumper; auth: Authenticator }): HttpAdapter {
  return bindAdapter(HEAP_DUMP_ROUTES, {
    [HEAP_DUMP_PATH]: async (req, res, { query }) => {
      queryParams(query, []);
      const principal = await deps.auth.authenticate(requestHeaders(req), requestTarget(req));
      const body = JSON.stringify({ path: await deps.heapDumper.write(principal) });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    },
  });
}

/**
 * `GET /internal/log-level` answers `{"level"}`, the level the answering process writes from;
 * `PUT` with `{"level": "error"}` changes it (the access log is written at `info` and `debug`) and
 * answers `{"level", "previous"}`. Both need an admin key of the installation's organization.
 */
export function createLogLevelAdapter(deps: { control: LogLevelControl; auth: Authenticator }): HttpAdapter {
  return bindAdapter(LOG_LEVEL_ROUTES, {
    [LOG_LEVEL_PATH]: async (req, res, { query }) => {
      queryParams(query, []);
      const principal = await deps.auth.authenticate(requestHeaders(req), requestTarget(req));
      const answer =
        req.method === "PUT"
          ? await deps.control.change(principal, levelOf(await readJsonBody(req)))
          : { level: await deps.control.read(principal) };
      const body = JSON.stringify(answer);
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      res.end(body);
    },
  });
}

/** The `level` of a `PUT /internal/log-level` body: an object with that one string field. */
function levelOf(body: JsonValue | undefined): string | undefined {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw invalid('the body must be a JSON object such as {"level": "error"}');
  for (const key of Object.keys(body))
    if (key !== "level") throw invalid(`unknown field ${JSON.stringify(key)}; the body takes only "level"`);
  const { level } = body;
  if (level !== undefined && typeof level !== "string") throw invalid("level must be a string");
  return level;
}

/** The query's parameters, each at most once and each among `allowed`; INVALID_ARGUMENT otherwise. */
function queryParams(query: string, allowed: readonly string[]): Map<string, string> {
  const params = new Map<string, string>();
  for (const [name, value] of parseQuery(query)) {
    if (!allowed.includes(name)) {
      const accepted = allowed.length === 0 ? "this endpoint takes none" : `it accepts ${allowed.join(", ")}`;
      throw invalid(`unknown query parameter ${JSON.stringify(name)}; ${accepted}`);
    }
    if (params.has(name)) throw invalid(`query parameter ${JSON.stringify(name)} is given more than once`);
    params.set(name, value);
  }
  return params;
}
