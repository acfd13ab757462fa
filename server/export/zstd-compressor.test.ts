import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { loadZstdCompressor, nativeZstdCompressor, wasmZstdCompressor } from "./zstd-compressor.js";

const { Decoder } = createRequire(import.meta.url)("@toondepauw/node-zstd") as {
  Decoder: new () => { decodeSync(data: Buffer): Buffer };
};

/** A page-like input: repetitive JSON with varying ids, about 1 MB. */
function sampleInput(): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < 8000; i++)
    parts.push(JSON.stringify({ role: "user", content: `question ${i}`, n: i * 7 }));
  return Buffer.from(parts.join(""));
}

describe("zstd compressors", () => {
  const input = sampleInput();

  it.each([
    ["native", async () => nativeZstdCompressor()],
    ["WebAssembly", wasmZstdCompressor],
  ])("the %s compressor writes standard frames that decompress to the input", async (_name, load) => {
    const compress = await load();
    const frame = compress(input);
    expect(frame.length).toBeLessThan(input.length / 4);
    expect(Buffer.compare(new Decoder().decodeSync(Buffer.from(frame)), input)).toBe(0);
  });

  it("takes a view into a larger buffer without reading past it", async () => {
    const compress = await loadZstdCompressor();
    const backing = Buffer.concat([Buffer.from("prefix-"), input, Buffer.from("-suffix")]);
    const view = backing.subarray(7, 7 + input.length);
    expect(Buffer.compare(new Decoder().decodeSync(Buffer.from(compress(view))), input)).toBe(0);
  });
});
