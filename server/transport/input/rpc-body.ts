import { promisify } from "node:util";
import { brotliDecompress, gunzip } from "node:zlib";
import type { DescField, DescMessage, DescMethod } from "@bufbuild/protobuf";
import { rawRequestChunks } from "../body/request-body.js";
import type { NodeServerRequest } from "../rest/node-types.js";
import { findBinaryProblem } from "./binary-screen.js";
import { type InputProblem, problemError } from "./input-problem.js";
import { findJsonProblem, jsonTextNeedsScreen } from "./json-screen.js";

const gunzipAsync = promisify(gunzip);
const brotliAsync = promisify(brotliDecompress);

/**
 * The body of an RPC request (Connect, gRPC, gRPC-Web) as connect-es reads it, screened first when
 * the method takes one request message (unary and server-streaming): the whole body is read (at most
 * `maxBytes`), its message taken out of the protocol's framing and compression, and checked before
 * protobuf-es decodes it: binary messages by {@link findBinaryProblem}, JSON for its nesting. A
 * problem fails the body with INVALID_ARGUMENT, which connect-es answers in the protocol's own way.
 * Client- and bidi-streaming bodies (gRPC reflection) pass through as they arrive.
 */
export async function* screenedRpcBody(
  req: NodeServerRequest,
  method: DescMethod,
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  if (method.methodKind !== "unary" && method.methodKind !== "server_streaming") {
    yield* rawRequestChunks(req, maxBytes);
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of rawRequestChunks(req, maxBytes)) chunks.push(chunk);
  const problem = await findRpcBodyProblem(method.input, req.headers, Buffer.concat(chunks), maxBytes);
  if (problem) throw problemError(problem);
  yield* chunks;
}

type Headers = NodeServerRequest["headers"];

/**
 * The content types whose messages come in envelopes, as connect-es serves them (gRPC-Web's base64
 * "-text" variant is not among them: connect-es answers it 415 itself).
 */
const ENVELOPED_TYPES = new Set([
  "application/connect+proto",
  "application/connect+json",
  "application/grpc",
  "application/grpc+proto",
  "application/grpc+json",
  "application/grpc-web",
  "application/grpc-web+proto",
  "application/grpc-web+json",
]);

/** The envelope flag of a compressed message (gRPC, gRPC-Web, Connect streaming). */
const COMPRESSED = 0x01;
/** Envelope flags of what is not a request message: Connect's end-of-stream, gRPC-Web's trailers. */
const NOT_A_MESSAGE = 0x02 | 0x80;

/**
 * The first problem of the request messages in `body`, or undefined. Framing this cannot read (an
 * unknown content type, a truncated envelope, an unsupported compression) is left to connect-es (or
 * the gRPC unary path), which answers those as the protocol prescribes.
 */
export async function findRpcBodyProblem(
  schema: DescMessage,
  headers: Headers,
  body: Buffer,
  maxBytes: number,
): Promise<InputProblem | undefined> {
  const type = String(headers["content-type"] ?? "")
    .split(";", 1)[0]!
    .trim()
    .toLowerCase();
  const json = type.endsWith("json");
  if (type === "application/proto" || type === "application/json") {
    const message = await decompress(body, headers["content-encoding"], maxBytes);
    return message && screen(schema, message, json);
  }
  if (!ENVELOPED_TYPES.has(type)) return undefined;
  const encoding = type.startsWith("application/connect")
    ? headers["connect-content-encoding"]
    : headers["grpc-encoding"];
  for (let at = 0; at + 5 <= body.length; ) {
    const flags = body[at]!;
    const length = body.readUInt32BE(at + 1);
    const data = body.subarray(at + 5, at + 5 + length);
    at += 5 + length;
    if (data.length < length || (flags & NOT_A_MESSAGE) !== 0) continue;
    const message = flags & COMPRESSED ? await decompress(data, encoding, maxBytes) : data;
    const problem = message && screen(schema, message, json);
    if (problem) return problem;
  }
  return undefined;
}

function screen(schema: DescMessage, message: Uint8Array, json: boolean): InputProblem | undefined {
  if (!json) return findBinaryProblem(schema, message);
  if (!jsonTextNeedsScreen(message)) return undefined;
  // Rare: parse (V8's parser is iterative) and screen, to say what and where, in proto field names.
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(message.buffer, message.byteOffset, message.byteLength).toString("utf8"));
  } catch {
    return undefined;
  }
  const problem = findJsonProblem(value);
  return problem && { ...problem, path: protoPath(schema, problem.path) };
}

/**
 * A path through a message's JSON form (Connect JSON names fields in lowerCamelCase) in proto field
 * names, as every other protocol's errors name them; member keys and indices stay as they are.
 */
function protoPath(schema: DescMessage, path: readonly (string | number)[]): (string | number)[] {
  let message: DescMessage | undefined = schema;
  let container: DescField | undefined;
  return path.map((key) => {
    if (container) {
      // An index of a list, or a key of a map: the element is the field's message, if any.
      message =
        container.message && !container.message.typeName.startsWith("google.protobuf.")
          ? container.message
          : undefined;
      container = undefined;
      return key;
    }
    const field = message?.fields.find((f) => f.jsonName === key || f.name === key);
    if (!field) return key;
    if (field.fieldKind === "list" || field.fieldKind === "map") container = field;
    else
      message =
        field.message && !field.message.typeName.startsWith("google.protobuf.") ? field.message : undefined;
    return field.name;
  });
}

/** The message decompressed, or undefined when the encoding is unknown or the data broken. */
async function decompress(
  data: Uint8Array,
  encoding: string | string[] | undefined,
  maxBytes: number,
): Promise<Uint8Array | undefined> {
  const name = String(encoding ?? "identity")
    .trim()
    .toLowerCase();
  try {
    if (name === "identity" || name === "") return data;
    if (name === "gzip") return await gunzipAsync(data, { maxOutputLength: maxBytes });
    if (name === "br") return await brotliAsync(data, { maxOutputLength: maxBytes });
  } catch {
    return undefined;
  }
  return undefined;
}
