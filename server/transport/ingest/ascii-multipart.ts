import { isAscii } from "node:buffer";
import { type MultipartLimits, type MultipartPart, parseMultipart } from "./multipart-parser.js";
import { sdkHead } from "./sdk-part-head.js";

/**
 * The parts of a whole multipart body. A body as the JS SDK sends it, in ASCII (as JSON of ASCII
 * text is), is read as one string: its delimiters are found by string search and each part's text
 * is a slice of that string, where the general parser finds them in the bytes and decodes each
 * part on its own. Anything else (a preamble, another header layout, whitespace after a boundary,
 * a part shorter than it declares, a non-ASCII byte, a body over the limit) is read by the general
 * parser from the start, so every answer, error or parts, is the general parser's.
 */
export async function parseMultipartBody(
  body: Buffer,
  boundary: string,
  limits: MultipartLimits,
): Promise<MultipartPart[]> {
  return asciiParts(body, boundary, limits) ?? (await parseMultipart([body], boundary, limits));
}

/** The parts of an SDK-shaped ASCII body, or undefined when the general parser must read it. */
function asciiParts(body: Buffer, boundary: string, limits: MultipartLimits): MultipartPart[] | undefined {
  if (body.length > limits.maxBytes || !isAscii(body)) return undefined;
  const text = body.toString("latin1");
  const opening = `--${boundary}`;
  const delimiter = `\r\n${opening}`;
  if (!text.startsWith(opening)) return undefined;
  const parts: MultipartPart[] = [];
  for (let at = opening.length; !text.startsWith("--", at); ) {
    if (!text.startsWith("\r\n", at)) return undefined;
    const headersEnd = text.indexOf("\r\n\r\n", at + 2);
    if (headersEnd === -1) return undefined;
    const head = sdkHead(text.slice(at + 2, headersEnd));
    if (head === undefined) return undefined;
    const start = headersEnd + 4;
    const end = text.indexOf(delimiter, start);
    const declaredLength = Number(head.lengthText);
    if (end === -1 || declaredLength > end - start) return undefined;
    parts.push({
      name: head.name,
      headers: head.headers,
      contentType: head.contentType,
      declaredLength,
      data: body.subarray(start, end),
      text: text.slice(start, end),
    });
    at = end + delimiter.length;
  }
  return parts;
}
