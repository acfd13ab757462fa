/**
 * The most bytes a zstd body can inflate to, read from its frame and block headers without
 * decompressing anything (RFC 8878): a frame that declares its content size inflates to exactly
 * that; otherwise each raw or RLE block to its stated size and each compressed block to at most the
 * block maximum (the smaller of the frame's window and 128 KiB). So a body is decompressed only
 * once it is known not to exceed the request limit, however it was crafted.
 */

/** Why a body is not zstd data; the message says what is wrong. */
export class ZstdFrameError extends Error {
  override readonly name = "ZstdFrameError";
}

/** A zstd frame's magic number, as the little-endian 32-bit word it is written as. */
const FRAME_MAGIC = 0xfd2fb528;
/** Skippable frames: magic numbers 0x184D2A50 to 0x184D2A5F, then a 4-byte length. */
const SKIPPABLE_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
/** The largest block's content (RFC 8878, Block_Maximum_Size). */
const MAX_BLOCK_BYTES = 128 * 1024;
/** Block types of a block header's bits 1-2. */
const RAW = 0;
const RLE = 1;
const COMPRESSED = 2;
/** Bytes of a block header, of a content checksum. */
const BLOCK_HEADER_BYTES = 3;
const CHECKSUM_BYTES = 4;
/** Dictionary_ID field sizes by the descriptor's flag, and Frame_Content_Size field sizes. */
const DICTIONARY_ID_BYTES = [0, 1, 2, 4] as const;
const CONTENT_SIZE_BYTES = [0, 2, 4, 8] as const;
/** A 2-byte Frame_Content_Size is stored less 256. */
const TWO_BYTE_SIZE_OFFSET = 256;

/** The upper bound of the inflated size of `data`, a sequence of zstd (and skippable) frames. */
export function zstdInflatedBound(data: Uint8Array): number {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  let bound = 0;
  if (data.length === 0) throw new ZstdFrameError("the body is empty");
  while (at < data.length) {
    need(data, at, 4);
    const magic = view.getUint32(at, true);
    at += 4;
    if ((magic & SKIPPABLE_MASK) >>> 0 === SKIPPABLE_MAGIC) {
      need(data, at, 4);
      at += 4 + view.getUint32(at, true);
      if (at > data.length) throw new ZstdFrameError("a skippable frame runs past the end of the body");
      continue;
    }
    if (magic !== FRAME_MAGIC)
      throw new ZstdFrameError("the body does not start a zstd frame where one should be");
    need(data, at, 1);
    const descriptor = data[at++] as number;
    const contentSizeFlag = descriptor >> 6;
    const singleSegment = (descriptor & 0x20) !== 0;
    const checksum = (descriptor & 0x04) !== 0;
    if ((descriptor & 0x08) !== 0) throw new ZstdFrameError("a zstd frame header sets its reserved bit");
    let window = 0;
    if (!singleSegment) {
      need(data, at, 1);
      const byte = data[at++] as number;
      const base = 2 ** (10 + (byte >> 3));
      window = base + (base / 8) * (byte & 7);
    }
    at += DICTIONARY_ID_BYTES[descriptor & 3] as number;
    const sizeBytes =
      contentSizeFlag === 0 && singleSegment ? 1 : (CONTENT_SIZE_BYTES[contentSizeFlag] as number);
    need(data, at, sizeBytes);
    let contentSize: number | undefined;
    if (sizeBytes === 1) contentSize = data[at] as number;
    else if (sizeBytes === 2) contentSize = view.getUint16(at, true) + TWO_BYTE_SIZE_OFFSET;
    else if (sizeBytes === 4) contentSize = view.getUint32(at, true);
    else if (sizeBytes === 8) contentSize = Number(view.getBigUint64(at, true));
    at += sizeBytes;
    if (singleSegment) window = contentSize ?? 0;
    const blockMaximum = Math.min(window, MAX_BLOCK_BYTES);
    let blocksBound = 0;
    for (let last = false; !last; ) {
      need(data, at, BLOCK_HEADER_BYTES);
      const header =
        (data[at] as number) | ((data[at + 1] as number) << 8) | ((data[at + 2] as number) << 16);
      at += BLOCK_HEADER_BYTES;
      last = (header & 1) === 1;
      const type = (header >> 1) & 3;
      const size = header >>> 3;
      if (type === RAW) {
        blocksBound += size;
        at += size;
      } else if (type === RLE) {
        blocksBound += size;
        at += 1;
      } else if (type === COMPRESSED) {
        blocksBound += blockMaximum;
        at += size;
      } else {
        throw new ZstdFrameError("a zstd block has the reserved block type");
      }
      if (at > data.length) throw new ZstdFrameError("a zstd block runs past the end of the body");
    }
    if (checksum) at += CHECKSUM_BYTES;
    if (at > data.length) throw new ZstdFrameError("a zstd frame's checksum runs past the end of the body");
    bound += contentSize ?? blocksBound;
  }
  return bound;
}

function need(data: Uint8Array, at: number, bytes: number): void {
  if (at + bytes > data.length) throw new ZstdFrameError("the zstd data ends in the middle of a frame");
}
