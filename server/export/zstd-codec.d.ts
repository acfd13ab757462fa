// zstd-codec 0.1.5 ships no types; these cover what zstd-compressor.ts uses.

declare module "zstd-codec" {
  /** zstd's one-shot API on the loaded binding. */
  interface Simple {
    /** Compresses at `level` (1–22). */
    compress(input: Uint8Array, level?: number): Uint8Array;
    decompress(input: Uint8Array): Uint8Array | null;
  }

  /** The loaded binding. */
  interface Binding {
    Simple: new () => Simple;
  }

  const zstdCodec: {
    ZstdCodec: {
      /** Loads the binding and calls `callback` with it. */
      run(callback: (binding: Binding) => void): void;
    };
  };
  export default zstdCodec;
}
