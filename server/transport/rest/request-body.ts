import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import type { JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { malformedRequestError, payloadTooLargeError, unsupportedEncodingError } from "./http-status.js";
import type { NodeServerRequest } from "./node-types.js";

/**
 * The largest request body accepted, before and after gzip decompression. Large enough for the
 * biggest legitimate REST payloads (run inputs, store values, state updates carrying documents);
 * small enough that a single request cannot exhaust the process's memory.
 */
export const maxRequestBodyBytes = 32 * 1024 * 1024;

const gunzipAsync = promisify(gunzip);

/**
 * Reads and parses a JSON request body (`Content-Encoding: gzip` or identity). Returns
 * `undefined` for an empty body. The content type is not checked: curl's `-d` sends
 * `application/x-www-form-urlencoded` and `fetch` with a string body sends `text/plain`, and
 * both carry JSON in practice.
 *
 * Throws a `ConnectError`: 400-tagged for malformed JSON or gzip data, 413-tagged over
 * {@link maxRequestBodyBytes}, 415-tagged for an unsupported content encoding.
 */
export async function readJsonBody(req: NodeServerRequest): Promise<JsonValue | undefined> {
  const encoding = req.headers["content-encoding"]?.trim().toLowerCase();
  const gzipped = encoding === "gzip" || encoding === "x-gzip";
  if (encoding !== undefined && encoding !== "identity" && !gzipped) {
    throw unsupportedEncodingError(
      `Content-Encoding "${encoding}" is not supported; send the body uncompressed or with gzip`,
    );
  }
  const declared = Number(req.headers["content-length"]);
  if (declared > maxRequestBodyBytes) throw tooLarge();

  let bytes = await readAll(req);
  if (gzipped && bytes.length > 0) bytes = await decompress(bytes);
  if (bytes.length === 0) return undefined;
  try {
    return JSON.parse(bytes.toString("utf8")) as JsonValue;
  } catch (error) {
    throw malformedRequestError(`the request body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * Collects the raw body. Past the limit it rejects at once but leaves the request flowing, so the
 * rest of the body is read and dropped and the 413 reaches the client on a healthy connection
 * (destroying the request would reset the connection before the client reads the answer).
 */
function readAll(req: NodeServerRequest): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= maxRequestBodyBytes) {
        chunks.push(chunk);
        return;
      }
      stop();
      reject(tooLarge());
    };
    const onEnd = (): void => {
      stop();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onAbort = (): void => {
      stop();
      reject(new ConnectError("the request body was not fully received", Code.Canceled));
    };
    const stop = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onAbort);
      req.off("close", onAbort);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onAbort);
    req.on("close", onAbort);
  });
}

async function decompress(bytes: Buffer): Promise<Buffer> {
  try {
    return await gunzipAsync(bytes, { maxOutputLength: maxRequestBodyBytes });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge();
    throw malformedRequestError("the request body is not valid gzip data");
  }
}

function tooLarge(): ConnectError {
  return payloadTooLargeError(
    `the request body is larger than ${maxRequestBodyBytes / 1024 / 1024} MiB; send less data per request`,
  );
}
