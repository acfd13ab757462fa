/**
 * OTLP/HTTP request bodies: `application/x-protobuf` (the protobuf encoding) or `application/json`
 * (the OTLP JSON encoding: proto3 JSON, except that trace and span ids are hex, not base64).
 */
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import {
  type ExportTraceServiceRequest,
  ExportTraceServiceRequestSchema,
} from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { malformedRequestError, unsupportedEncodingError } from "../rest/http-status.js";
import { decodeExportTraceRequest } from "./otlp-trace-wire.js";

/** The encodings of OTLP/HTTP. */
export type OtlpEncoding = "protobuf" | "json";

/** The content types OTLP exporters send, by encoding. */
const CONTENT_TYPES: Readonly<Record<string, OtlpEncoding>> = {
  "application/x-protobuf": "protobuf",
  "application/protobuf": "protobuf",
  "application/json": "json",
};

/** The encoding of a Content-Type; 415 for any other. */
export function encodingOf(contentType: string | undefined): OtlpEncoding {
  const type = (contentType ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? "";
  const encoding = CONTENT_TYPES[type];
  if (encoding === undefined) {
    throw unsupportedEncodingError(
      `Content-Type ${JSON.stringify(contentType ?? "")} is not an OTLP encoding: send application/x-protobuf or application/json`,
    );
  }
  return encoding;
}

/**
 * The export request in `body`; 400 for a body that does not decode. What its spans hold is judged
 * span by span as they are mapped (otlp-span-screen.ts): a span that cannot be stored is refused
 * alone, in the answer's partial success.
 */
export function decodeExportRequest(body: Uint8Array, encoding: OtlpEncoding): ExportTraceServiceRequest {
  try {
    return encoding === "protobuf"
      ? decodeExportTraceRequest(body)
      : fromJson(
          ExportTraceServiceRequestSchema,
          hexIdsAsBase64(
            JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8")),
          ),
          { ignoreUnknownFields: true },
        );
  } catch (error) {
    throw malformedRequestError(
      `the body is not an OTLP ExportTraceServiceRequest in ${encoding === "json" ? "JSON" : "protobuf"}: ${(error as Error).message}`,
    );
  }
}

/**
 * The binary request of a gRPC call, for the gRPC unary path (bound-service.ts, `decoders`): its
 * decoding failures are INVALID_ARGUMENT naming what is wrong.
 */
export function decodeBinaryExportRequest(bytes: Uint8Array): ExportTraceServiceRequest {
  return decodeExportRequest(bytes, "protobuf");
}

/** Id fields of spans and links, in both JSON spellings. */
const ID_FIELDS = ["traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"];

/**
 * The JSON request with its hex ids as base64, as proto3 JSON reads bytes. An id that is not hex
 * becomes empty, so that its span is refused by itself (a partial success) rather than the export.
 */
function hexIdsAsBase64(json: JsonValue): JsonValue {
  for (const resourceSpans of listOf(json, "resourceSpans", "resource_spans")) {
    for (const scopeSpans of listOf(resourceSpans, "scopeSpans", "scope_spans")) {
      for (const span of listOf(scopeSpans, "spans")) {
        rewriteIds(span);
        for (const link of listOf(span, "links")) rewriteIds(link);
      }
    }
  }
  return json;
}

function listOf(value: JsonValue | undefined, ...keys: string[]): JsonValue[] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [];
  for (const key of keys) {
    const list = value[key];
    if (Array.isArray(list)) return list;
  }
  return [];
}

function rewriteIds(value: JsonValue): void {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return;
  for (const key of ID_FIELDS) {
    const id = value[key];
    if (typeof id !== "string") continue;
    value[key] = /^(?:[0-9a-f]{2})*$/i.test(id) ? Buffer.from(id, "hex").toString("base64") : "";
  }
}
