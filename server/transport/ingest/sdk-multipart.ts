import { isAscii, isUtf8 } from "node:buffer";
import { type MultipartLimits, type MultipartPart, parseMultipart } from "./multipart-parser.js";
import { sdkHead } from "./sdk-part-head.js";

/**
 * The parts of a whole multipart body. A body laid out as the SDKs send it, in valid UTF-8, is
 * decoded once and read as one string: its delimiters are found by string search and each part's
 * text is a slice of that string, where the general parser finds them in the bytes and decodes each
 * part on its own. As the delimiters are ASCII, and UTF-8 never encodes anything else with ASCII
 * bytes, the slices are the texts the general parser would decode. Anything else (a preamble,
 * another header layout or a header that is not ASCII, whitespace after a boundary, a part shorter
 * than it declares, bytes that are not UTF-8, a body over the limit) is read by the general parser
 * from the start, so every answer, error or parts, is the general parser's.
 */
export async function parseMultipartBody(
  body: Buffer,
  boundary: string,
  limits: MultipartLimits,
): Promise<MultipartPart[]> {
  return sdkParts(body, boundary, limits) ?? (await parseMultipart([body], boundary, limits));
}

/** The parts of an SDK-shaped UTF-8 body, or undefined when the general parser must read it. */
function sdkParts(body: Buffer, boundary: string, limits: MultipartLimits): MultipartPart[] | undefined {
  if (body.length > limits.maxBytes) return undefined;
  const ascii = isAscii(body);
  if (!ascii && !isUtf8(body)) return undefined;
  const text = body.toString(ascii ? "latin1" : "utf8");
  const bytes = byteOffsets(text, ascii);
  const opening = `--${boundary}`;
  const delimiter = `\r\n${opening}`;
  if (!text.startsWith(opening)) return undefined;
  const parts: MultipartPart[] = [];
  for (let at = opening.length; !text.startsWith("--", at); ) {
    if (!text.startsWith("\r\n", at)) return undefined;
    const headersEnd = text.indexOf("\r\n\r\n", at + 2);
    if (headersEnd === -1) return undefined;
    const block = text.slice(at + 2, headersEnd);
    // The general parser reads header bytes as Latin-1: a header that is not ASCII reads differently.
    if (!ascii && !isAsciiText(block)) return undefined;
    const head = sdkHead(block);
    if (head === undefined) return undefined;
    const start = headersEnd + 4;
    const end = text.indexOf(delimiter, start);
    if (end === -1) return undefined;
    const data = body.subarray(bytes(start), bytes(end));
    const declaredLength = Number(head.lengthText);
    if (declaredLength > data.length) return undefined;
    parts.push({
      name: head.name,
      headers: head.headers,
      contentType: head.contentType,
      declaredLength,
      data,
      text: text.slice(start, end),
    });
    at = end + delimiter.length;
  }
  return parts;
}

/**
 * The byte offset in the body of each position of its decoded text, asked for in increasing order.
 * One byte per character in ASCII; otherwise each step adds the UTF-8 length of the text since the
 * last position asked.
 */
function byteOffsets(text: string, ascii: boolean): (position: number) => number {
  if (ascii) return (position) => position;
  let lastPosition = 0;
  let lastByte = 0;
  return (position) => {
    lastByte += Buffer.byteLength(text.slice(lastPosition, position));
    lastPosition = position;
    return lastByte;
  };
}

/** Whether a (short) string holds only ASCII characters. */
function isAsciiText(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return false;
  return true;
}
