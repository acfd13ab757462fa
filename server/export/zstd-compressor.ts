import { createRequire } from "node:module";
import zstdCodec from "zstd-codec";

/** A synchronous compressor, as the row-group encoder calls it for every page. */
export type Compressor = (input: Uint8Array) => Uint8Array;

/**
 * zstd level 3: zstd's own default, the usual balance of speed and size for columnar data (the
 * writer benchmark in stack-findings measured it).
 */
const LEVEL = 3;

/** The one class of `@toondepauw/node-zstd` used here (the package ships only CommonJS). */
interface NativeZstd {
  Encoder: new (level: number) => { encodeSync(data: Buffer): Buffer };
}

let loading: Promise<Compressor> | undefined;

/**
 * The ZSTD compressor, loaded once per process: native zstd (`@toondepauw/node-zstd`, a Node-API
 * binding shipped as prebuilt platform packages, about 2.5× the speed of the WebAssembly build),
 * or where no prebuilt binary fits the platform, zstd compiled to WebAssembly (`zstd-codec`).
 * Node 20's zlib has no zstd. Both are synchronous, as the encoder needs, and write standard frames.
 */
export function loadZstdCompressor(): Promise<Compressor> {
  loading ??= Promise.resolve().then(() => {
    try {
      return nativeZstdCompressor();
    } catch {
      return wasmZstdCompressor();
    }
  });
  return loading;
}

/** The native compressor; throws when the platform has no prebuilt binding. */
export function nativeZstdCompressor(): Compressor {
  const { Encoder } = createRequire(import.meta.url)("@toondepauw/node-zstd") as NativeZstd;
  const encoder = new Encoder(LEVEL);
  return (input) => encoder.encodeSync(Buffer.from(input.buffer, input.byteOffset, input.byteLength));
}

/** The WebAssembly compressor. */
export function wasmZstdCompressor(): Promise<Compressor> {
  return new Promise<Compressor>((resolve) => {
    zstdCodec.ZstdCodec.run((binding) => {
      const simple = new binding.Simple();
      resolve((input) => simple.compress(input, LEVEL));
    });
  });
}
