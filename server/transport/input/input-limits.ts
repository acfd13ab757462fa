/**
 * The limits every request is held to, on every protocol, before any handler or SQL sees it. The
 * "Input limits" section of docs/api.md states them for users.
 */

/**
 * How deep objects and arrays may nest in one request (the root object is level 1). Legitimate
 * payloads stay far below: a LangGraph state of LangChain messages with tool calls nests about
 * 10 levels, a LangSmith run's serialized chain of nested runnables about 40. 128 is serde_json's
 * default limit and leaves 3× that headroom, while every recursive step over a request (protobuf
 * decoding, JSON.stringify, Postgres' jsonb input) stays far from exhausting its stack.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * protobuf-es's recursion limit when it decodes JSON: one step per message and per
 * google.protobuf.Value, so a document of {@link MAX_JSON_DEPTH} levels needs at most one step
 * more; the margin keeps every request within the limit decodable, so that our check (with its
 * message naming the field) is the one that refuses deeper ones.
 */
export const PROTOBUF_JSON_RECURSION_LIMIT = MAX_JSON_DEPTH + 8;

/**
 * protobuf-es's recursion limit when it decodes the binary format: a JSON level inside a
 * google.protobuf.Struct is two messages there (a Value holding a Struct or ListValue).
 */
export const PROTOBUF_BINARY_RECURSION_LIMIT = 2 * MAX_JSON_DEPTH + 16;

/**
 * The earliest and latest instants a timestamp may name, in seconds since the epoch:
 * 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z, google.protobuf.Timestamp's documented
 * range. RFC 3339 has four-digit years, JavaScript dates and Postgres both hold the whole range, and
 * every timestamp we write back (responses, CSV, dotted_order) stays printable in that form.
 */
export const MIN_TIMESTAMP_SECONDS = -62_135_596_800n;
export const MAX_TIMESTAMP_SECONDS = 253_402_300_799n;

/** The same range as RFC 3339 text, for error messages. */
export const TIMESTAMP_RANGE_TEXT = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z";
