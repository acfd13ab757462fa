/**
 * OTLP/HTTP trace export (REST-only: OTLP/HTTP is no RPC path), at LangSmith's paths and the one an
 * OpenTelemetry collector or SDK defaults to:
 *
 * - `POST /otel/v1/traces`, `POST /api/v1/otel/v1/traces` (LangSmith's, cloud and self-hosted)
 * - `POST /v1/traces` (`OTEL_EXPORTER_OTLP_ENDPOINT=http://host:port`)
 *
 * Bodies are `application/x-protobuf` or `application/json`, plain or gzip; the answer is the
 * ExportTraceServiceResponse in the request's encoding (200, with `partial_success` when spans were
 * refused). 400 for a body that does not decode, 415 for another content type or encoding.
 * OTLP/gRPC is the same service through Connect (services/tracing/otlp-trace-service.ts).
 */
import { toBinary, toJsonString } from "@bufbuild/protobuf";
import { ExportTraceServiceResponseSchema } from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { Authenticator } from "../../services/iam/authenticator.js";
import { exportTraces } from "../../services/tracing/otlp-trace-service.js";
import type { IngestService } from "../../tracing/ingest-service.js";
import { requestBytes } from "../body/request-body.js";
import { type AdapterRoute, type AdapterServe, bindAdapter, type HttpAdapter } from "../http-adapter.js";
import { requestHeaders, requestTarget } from "../request-headers.js";
import { decodeExportRequest, encodingOf } from "./otlp-request.js";
import { otlpSpanScreen } from "./otlp-span-screen.js";

/** Dependencies of {@link createOtlpHttpAdapter}. */
export interface OtlpHttpAdapterDeps {
  ingest: IngestService;
  auth: Authenticator;
}

/** The OTLP/HTTP trace routes. */
export const OTLP_HTTP_ROUTES = [
  { methods: ["POST"], path: "/otel/v1/traces" },
  { methods: ["POST"], path: "/api/v1/otel/v1/traces" },
  { methods: ["POST"], path: "/v1/traces" },
] as const satisfies readonly AdapterRoute[];

/** Creates the OTLP/HTTP adapter. */
export function createOtlpHttpAdapter({ ingest, auth }: OtlpHttpAdapterDeps): HttpAdapter {
  const serve: AdapterServe = async (req, res) => {
    // The content type is checked before the key: an exporter misconfigured both ways hears of the
    // encoding, which no key fixes.
    const encoding = encodingOf(req.headers["content-type"]);
    const headers = requestHeaders(req);
    const principal = await auth.authenticate(headers, requestTarget(req));
    const request = decodeExportRequest(await requestBytes(req), encoding);
    const response = await exportTraces({ ingest, screen: otlpSpanScreen }, principal, headers, request);
    const body =
      encoding === "json"
        ? Buffer.from(toJsonString(ExportTraceServiceResponseSchema, response))
        : Buffer.from(toBinary(ExportTraceServiceResponseSchema, response));
    res.writeHead(200, {
      "content-type": encoding === "json" ? "application/json" : "application/x-protobuf",
      "content-length": body.length,
    });
    res.end(body);
  };
  return bindAdapter(OTLP_HTTP_ROUTES, {
    "/otel/v1/traces": serve,
    "/api/v1/otel/v1/traces": serve,
    "/v1/traces": serve,
  });
}
