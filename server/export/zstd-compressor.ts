import zstdCodec from "zstd-codec";

/** A synchronous compressor, as hyparquet-writer calls it for every page. */
export type Compressor = (input: Uint8Array) => Uint8Array;

/**
 * zstd level 3: zstd's own default, the usual balance of speed and size for columnar data (the
 * writer benchmark in stack-findings measured it).
 */
const LEVEL = 3;

let loading: Promise<Compressor> | undefined;

/**
 * The ZSTD compressor, loaded once per process. Node 20 has no zstd in zlib, so this is zstd
 * compiled to JavaScript (`zstd-codec`), which is synchronous as hyparquet-writer requires.
 */
export function loadZstdCompressor(): Promise<Compressor> {
  loading ??= new Promise<Compressor>((resolve) => {
    zstdCodec.ZstdCodec.run((binding) => {
      const simple = new binding.Simple();
      resolve((input) => simple.compress(input, LEVEL));
    });
  });
  return loading;
}
