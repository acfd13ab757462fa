import { Code, ConnectError } from "@connectrpc/connect";
import { type Compression, compressedFlag } from "@connectrpc/connect/protocol";
import { bodyTooLargeError } from "../body/body-limit.js";
import type { NodeServerRequest } from "../rest/node-types.js";

/** Bytes of a gRPC envelope's prefix: one flags byte, then the message length (big-endian uint32). */
const PREFIX_BYTES = 5;

/**
 * The whole request body, at most `maxBytes` (RESOURCE_EXHAUSTED past that, as soon as the declared
 * or received length says so). A body refused early is left unread, for unread-body.ts to settle
 * after the answer, as {@link rawRequestChunks} does; here without an async iterator per request.
 */
export function readRequestBody(req: NodeServerRequest, maxBytes: number): Promise<Buffer> {
  if (Number(req.headers["content-length"]) > maxBytes) return Promise.reject(bodyTooLargeError());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (error: ConnectError | undefined) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onBroken);
      req.off("aborted", onBroken);
      req.off("close", onBroken);
      if (error) reject(error);
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.pause();
        settle(bodyTooLargeError());
      } else chunks.push(chunk);
    };
    const onEnd = () => settle(undefined);
    const onBroken = () => settle(new ConnectError("the request body was not fully received", Code.Canceled));
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", onBroken);
    req.once("aborted", onBroken);
    // A stream closed before its end (a reset) must not leave the call waiting for ever.
    req.once("close", onBroken);
  });
}

/** How {@link unaryRequestMessage} decodes: connect-es's limits and parser for the method. */
export interface MessageDecoding<T> {
  /** The largest message accepted, compressed and decompressed. */
  readMaxBytes: number;
  /** The request's `grpc-encoding`, negotiated; null for identity. */
  compression: Compression | null;
  /** connect-es's binary parser of the method's input (it checks readMaxBytes again). */
  parse(data: Uint8Array): T;
}

/**
 * The one request message of a unary call from a gRPC body, with the errors connect-es's envelope
 * pipeline raises, in its order: a length over readMaxBytes, a compressed message without an
 * encoding, a second message, a truncated envelope, no message at all.
 */
export async function unaryRequestMessage<T>(body: Buffer, decoding: MessageDecoding<T>): Promise<T> {
  let message: T | undefined;
  let count = 0;
  let at = 0;
  while (body.length - at >= PREFIX_BYTES) {
    const flags = body[at] as number;
    const length = body.readUInt32BE(at + 1);
    if (length > decoding.readMaxBytes) {
      throw new ConnectError(
        `message size ${length} is larger than configured readMaxBytes ${decoding.readMaxBytes}`,
        Code.ResourceExhausted,
      );
    }
    if (body.length - at - PREFIX_BYTES < length) break;
    let data: Uint8Array = body.subarray(at + PREFIX_BYTES, at + PREFIX_BYTES + length);
    at += PREFIX_BYTES + length;
    if ((flags & compressedFlag) === compressedFlag) {
      if (!decoding.compression) {
        throw new ConnectError(
          "received compressed envelope, but do not know how to decompress",
          Code.Internal,
        );
      }
      data = await decoding.compression.decompress(data, decoding.readMaxBytes);
    }
    message = decoding.parse(data);
    if (++count > 1) {
      throw new ConnectError(
        "protocol error: received extra input message for unary method",
        Code.Unimplemented,
      );
    }
  }
  if (at < body.length) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  if (count === 0) {
    throw new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
  }
  return message as T;
}
