import { createRequire } from "node:module";
import zstdCodec from "zstd-codec";
import { malformedRequestError } from "../rest/http-status.js";
import { bodyTooLargeError, maxRequestBodyBytes } from "./body-limit.js";
import { ZstdFrameError, zstdInflatedBound } from "./zstd-frames.js";

/** Decompresses a whole zstd buffer. */
type Decompressor = (data: Buffer) => Promise<Buffer>;

/** The one class of `@toondepauw/node-zstd` used here (the package ships only CommonJS). */
interface NativeZstd {
  Decoder: new () => { decode(data: Buffer): Promise<Buffer> };
}

let loading: Promise<Decompressor> | undefined;

/**
 * The zstd decompressor, loaded once per process: native zstd (`@toondepauw/node-zstd`, which
 * decodes on libuv's thread pool), or where no prebuilt binary fits the platform, zstd compiled to
 * WebAssembly (`zstd-codec`). Node 20's zlib has no zstd.
 */
function loadDecompressor(): Promise<Decompressor> {
  loading ??= Promise.resolve().then(() => {
    try {
      const { Decoder } = createRequire(import.meta.url)("@toondepauw/node-zstd") as NativeZstd;
      const decoder = new Decoder();
      return (data: Buffer) => decoder.decode(data);
    } catch {
      return new Promise<Decompressor>((resolve) => {
        zstdCodec.ZstdCodec.run((binding) => {
          const simple = new binding.Simple();
          resolve(async (data) => {
            const out = simple.decompress(data);
            if (out === null) throw new Error("zstd decompression failed");
            return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
          });
        });
      });
    }
  });
  return loading;
}

/**
 * A `Content-Encoding: zstd` body (langsmith 0.12, the Python SDK) decompressed: 400 for data that
 * is not zstd, 413 when it may inflate beyond {@link maxRequestBodyBytes} (judged from its frame
 * headers before anything is inflated, see zstd-frames.ts).
 */
export async function unzstdBody(raw: Buffer): Promise<Buffer> {
  let bound: number;
  try {
    bound = zstdInflatedBound(raw);
  } catch (error) {
    if (error instanceof ZstdFrameError)
      throw malformedRequestError(`the request body is not valid zstd data: ${error.message}`);
    throw error;
  }
  if (bound > maxRequestBodyBytes) throw bodyTooLargeError();
  const decompress = await loadDecompressor();
  try {
    return await decompress(raw);
  } catch {
    throw malformedRequestError("the request body is not valid zstd data");
  }
}
