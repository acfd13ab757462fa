import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { ZstdFrameError, zstdInflatedBound } from "./zstd-frames.js";

const { Encoder } = createRequire(import.meta.url)("@toondepauw/node-zstd") as {
  Encoder: new (level: number) => { encodeSync(data: Buffer): Buffer };
};

/** A frame without a declared size (as streaming compressors write): window 1 MiB, then `blocks`. */
function unsizedFrame(blocks: Buffer[]): Buffer {
  // Descriptor: no content size, not single segment, no checksum; window descriptor 10 → 2^20.
  return Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 10 << 3]), ...blocks]);
}

function block(type: number, size: number, last: boolean, content: Buffer): Buffer {
  const header = Buffer.alloc(3);
  header.writeUIntLE((last ? 1 : 0) | (type << 1) | (size << 3), 0, 3);
  return Buffer.concat([header, content]);
}

describe("zstdInflatedBound", () => {
  it("is the declared size of frames that declare it", () => {
    // Single segment, a 4-byte Frame_Content_Size of 5, then one raw block of 5 bytes.
    const frame = Buffer.concat([
      Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xa0, 5, 0, 0, 0]),
      block(0, 5, true, Buffer.from("hello")),
    ]);
    expect(zstdInflatedBound(frame)).toBe(5);
    expect(zstdInflatedBound(Buffer.concat([frame, frame]))).toBe(10);
  });

  it("bounds what a streaming compressor writes within a block of what it inflates to", () => {
    const rows = Array.from({ length: 40_000 }, (_, i) => JSON.stringify({ id: i, name: `run ${i % 97}` }));
    const data = Buffer.from(rows.join("\n"));
    const bound = zstdInflatedBound(new Encoder(3).encodeSync(data));
    expect(bound).toBeGreaterThanOrEqual(data.length);
    expect(bound).toBeLessThanOrEqual(data.length + 128 * 1024);
  });

  it("bounds frames without a size by their blocks: raw and RLE exactly, compressed at the block maximum", () => {
    const frame = unsizedFrame([
      block(0, 5, false, Buffer.from("hello")),
      block(1, 1000, false, Buffer.from("a")),
      block(2, 2, true, Buffer.from([0, 0])),
    ]);
    expect(zstdInflatedBound(frame)).toBe(5 + 1000 + 128 * 1024);
  });

  it("skips skippable frames", () => {
    const skippable = Buffer.from([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
    expect(
      zstdInflatedBound(Buffer.concat([skippable, unsizedFrame([block(0, 1, true, Buffer.from("z"))])])),
    ).toBe(1);
  });

  it("refuses what is not zstd, or ends inside a frame", () => {
    expect(() => zstdInflatedBound(Buffer.from("plain text"))).toThrow(ZstdFrameError);
    expect(() => zstdInflatedBound(Buffer.alloc(0))).toThrow(ZstdFrameError);
    expect(() => zstdInflatedBound(unsizedFrame([block(0, 50, true, Buffer.from("short"))]))).toThrow(
      /past the end/,
    );
    expect(() => zstdInflatedBound(unsizedFrame([block(3, 1, true, Buffer.from("r"))]))).toThrow(/reserved/);
  });
});
