/**
 * A streaming `multipart/form-data` parser (RFC 7578 / RFC 2046) for trace ingest. It reads the
 * body chunk by chunk (so a gzip stream can feed it), finds parts by their boundary wherever the
 * chunks split, and keeps only a boundary's length of look-behind in its scan buffer.
 *
 * A part's declared length (`Content-Type: ...; length=N` as the JS SDK sends it, or a
 * `Content-Length` part header as the Python SDK does) is checked but does not delimit the part:
 * the JS SDK counts UTF-16 code units, not bytes, so for non-ASCII JSON it declares less than the
 * part holds. The boundary delimits; a part shorter than it declares is a truncated body.
 */

import { type SdkHead, sdkHead } from "./sdk-part-head.js";

/** One part of a multipart body. */
export interface MultipartPart {
  /** The `name` of its Content-Disposition. */
  readonly name: string;
  /** Its headers, names lowercased. */
  readonly headers: ReadonlyMap<string, string>;
  /** Its Content-Type (parameters included); empty when absent. */
  readonly contentType: string;
  /** The length it declares (`length=` parameter or Content-Length); null when none. */
  readonly declaredLength: number | null;
  /** Its bytes. */
  readonly data: Buffer;
  /**
   * Its bytes as text, when the parser read them as text: a UTF-8 body in the SDKs' layout (see
   * sdk-multipart.ts).
   */
  readonly text?: string;
}

/** Why a body could not be parsed: `malformed` framing or headers, or `too-large`. */
export class MultipartError extends Error {
  override readonly name = "MultipartError";
  constructor(
    message: string,
    readonly kind: "malformed" | "too-large",
  ) {
    super(message);
  }
}

/** Limits of {@link parseMultipart}. */
export interface MultipartLimits {
  /** Largest body, in bytes, counted as the parser reads them. */
  readonly maxBytes: number;
  /** Largest header block of one part; parts carry a few short headers. */
  readonly maxHeaderBytes?: number;
}

/** Default header block limit: two or three headers of a few hundred bytes each, with room to spare. */
const DEFAULT_MAX_HEADER_BYTES = 16 * 1024;
/** RFC 2046: a boundary is 1 to 70 characters. */
const MAX_BOUNDARY_LENGTH = 70;

const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");

/**
 * The boundary of a `multipart/form-data` Content-Type; throws a `malformed` {@link MultipartError}
 * when the type is something else or has no usable boundary.
 */
export function boundaryOf(contentType: string | undefined): string {
  const type = contentType ?? "";
  if (!/^\s*multipart\/form-data\s*(;|$)/i.test(type)) {
    throw new MultipartError(
      `Content-Type must be multipart/form-data with a boundary, got "${type || "(none)"}"`,
      "malformed",
    );
  }
  const match = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(type);
  const boundary = match?.[1] ?? match?.[2];
  if (!boundary || boundary.length > MAX_BOUNDARY_LENGTH) {
    throw new MultipartError(
      `the multipart/form-data Content-Type needs a boundary parameter of 1 to ${MAX_BOUNDARY_LENGTH} characters`,
      "malformed",
    );
  }
  return boundary;
}

/** Parses a whole multipart body into its parts, in order. */
export async function parseMultipart(
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  boundary: string,
  limits: MultipartLimits,
): Promise<MultipartPart[]> {
  const maxHeaderBytes = limits.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  // Every delimiter but one at the very start of the body is searched as CRLF "--" boundary.
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const opening = delimiter.subarray(CRLF.length);
  const parts: MultipartPart[] = [];
  // Typed with `as`: advance() changes it, which control-flow narrowing in this scope cannot see.
  let state = "start" as "start" | "preamble" | "after-delimiter" | "headers" | "body" | "done";
  // The unread bytes are buffer[at...]: positions move through the buffer, which is only sliced for
  // a part's bytes (a Buffer view is an object, and a body holds hundreds of parts), and a chunk
  // that arrives when all is read becomes the buffer as it is, uncopied.
  let buffer: Buffer = Buffer.alloc(0);
  let at = 0;
  let received = 0;
  let headers = new Map<string, string>();
  // The current part's headers when they are laid out as the SDKs write them, read without the
  // general parser (see sdkHead); undefined when `headers` holds them.
  let head: SdkHead | undefined;
  let chunks: Buffer[] = [];

  const finishPart = (tail: Buffer) => {
    // Most parts lie within one chunk: their bytes are a view of it, not a copy.
    const data = chunks.length === 0 ? tail : Buffer.concat([...chunks, tail]);
    parts.push(
      head === undefined
        ? makePart(headers, data, parts.length)
        : partOf(head.name, head.headers, head.contentType, head.lengthText, data),
    );
    chunks = [];
  };

  const advance = (): boolean => {
    switch (state) {
      case "start": {
        // A body that opens with its boundary has no preamble (nor a CRLF before the boundary).
        if (buffer.length - at < opening.length) return false;
        const opens = buffer.subarray(at, at + opening.length).equals(opening);
        if (opens) at += opening.length;
        state = opens ? "after-delimiter" : "preamble";
        return true;
      }
      case "preamble":
      case "body": {
        const found = buffer.indexOf(delimiter, at);
        if (found === -1) {
          // Keep what could be the start of a delimiter split across chunks; the rest is settled.
          const settled = Math.max(at, buffer.length - (delimiter.length - 1));
          if (state === "body" && settled > at) chunks.push(buffer.subarray(at, settled));
          at = settled;
          return false;
        }
        if (state === "body") finishPart(buffer.subarray(at, found));
        at = found + delimiter.length;
        state = "after-delimiter";
        return true;
      }
      case "after-delimiter": {
        if (buffer.length - at < 2) return false;
        if (buffer[at] === 0x2d && buffer[at + 1] === 0x2d) {
          state = "done";
          return false;
        }
        // RFC 2046 allows linear whitespace after a delimiter before its CRLF.
        let i = at;
        while (i < buffer.length && (buffer[i] === 0x20 || buffer[i] === 0x09)) i++;
        if (buffer.length < i + 2) return false;
        if (buffer[i] !== 0x0d || buffer[i + 1] !== 0x0a) {
          throw new MultipartError(
            `malformed multipart body: the boundary of part ${parts.length + 1} is not followed by CRLF`,
            "malformed",
          );
        }
        at = i + 2;
        state = "headers";
        return true;
      }
      case "headers": {
        if (buffer.length - at < 2) return false;
        // A part without headers: its header block is just the empty line.
        if (buffer[at] === 0x0d && buffer[at + 1] === 0x0a) {
          headers = new Map();
          head = undefined;
          at += 2;
          state = "body";
          return true;
        }
        const end = buffer.indexOf(HEADER_END, at);
        if (end === -1) {
          if (buffer.length - at > maxHeaderBytes) {
            throw new MultipartError(
              `malformed multipart body: the headers of part ${parts.length + 1} exceed ${maxHeaderBytes} bytes`,
              "malformed",
            );
          }
          return false;
        }
        const block = buffer.toString("latin1", at, end);
        head = sdkHead(block);
        if (head === undefined) headers = parseHeaders(block, parts.length + 1);
        at = end + HEADER_END.length;
        state = "body";
        return true;
      }
      case "done":
        return false;
    }
  };

  for await (const chunk of body) {
    received += chunk.byteLength;
    if (received > limits.maxBytes) {
      throw new MultipartError(`the request body exceeds the limit of ${limits.maxBytes} bytes`, "too-large");
    }
    if (state === "done") continue;
    const bytes = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    buffer = at === buffer.length ? bytes : Buffer.concat([buffer.subarray(at), bytes]);
    at = 0;
    while (advance()) {
      // advance() consumes as much of the buffer as it can.
    }
  }
  if (state !== "done") {
    throw new MultipartError(
      `malformed multipart body: it ended before its closing boundary --${boundary}--`,
      "malformed",
    );
  }
  return parts;
}

function parseHeaders(block: string, index: number): Map<string, string> {
  const headers = new Map<string, string>();
  // Line by line without splitting the block: parts carry two or three short headers each.
  for (let start = 0; start <= block.length; ) {
    const lineEnd = block.indexOf("\r\n", start);
    const end = lineEnd === -1 ? block.length : lineEnd;
    const colon = block.indexOf(":", start);
    if (colon <= start || colon >= end) {
      throw new MultipartError(
        `malformed multipart body: part ${index} has a bad header line "${block.slice(start, end)}"`,
        "malformed",
      );
    }
    headers.set(block.slice(start, colon).trim().toLowerCase(), block.slice(colon + 1, end).trim());
    start = end + 2;
  }
  return headers;
}

/**
 * The name of `form-data; name="<name>"` as the SDKs write it: found without a regular expression,
 * or undefined for anything else (another parameter first, an escape, no quotes), which
 * {@link nameParameter} then reads.
 */
function plainQuotedName(disposition: string): string | undefined {
  const prefix = 'form-data; name="';
  if (!disposition.startsWith(prefix)) return undefined;
  const end = disposition.indexOf('"', prefix.length);
  if (end === -1) return undefined;
  const name = disposition.slice(prefix.length, end);
  return name.includes("\\") ? undefined : name;
}

/** The `name` parameter of a Content-Disposition, quoted (with backslash escapes) or not. */
function nameParameter(disposition: string): string | undefined {
  const match = /(?:^|;)\s*name=(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(disposition);
  return match?.[1]?.replace(/\\(.)/g, "$1") ?? match?.[2];
}

function makePart(headers: Map<string, string>, data: Buffer, index: number): MultipartPart {
  const disposition = headers.get("content-disposition") ?? "";
  const name = plainQuotedName(disposition) ?? nameParameter(disposition);
  if (!name) {
    throw new MultipartError(
      `malformed multipart body: part ${index + 1} has no name in its Content-Disposition header`,
      "malformed",
    );
  }
  const contentType = headers.get("content-type") ?? "";
  const lengthParam = /;\s*length=([^;\s]*)/i.exec(contentType)?.[1];
  return partOf(name, headers, contentType, lengthParam ?? headers.get("content-length"), data);
}

/** A part, once its declared length is checked against the bytes it holds. */
function partOf(
  name: string,
  headers: Map<string, string>,
  contentType: string,
  lengthText: string | undefined,
  data: Buffer,
): MultipartPart {
  let declaredLength: number | null = null;
  if (lengthText !== undefined) {
    if (!/^\d+$/.test(lengthText)) {
      throw new MultipartError(
        `part "${name}" declares a length that is not a number: "${lengthText}"`,
        "malformed",
      );
    }
    declaredLength = Number(lengthText);
    if (declaredLength > data.length) {
      throw new MultipartError(
        `part "${name}" declares ${declaredLength} bytes but holds ${data.length}: the body is truncated`,
        "malformed",
      );
    }
  }
  return { name, headers, contentType, declaredLength, data };
}
