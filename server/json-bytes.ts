/**
 * JSON written straight into a Buffer as UTF-8, for a log line written on every request: the bytes
 * are the text `JSON.stringify` would give, without the strings and objects it takes to get there.
 * Each writer takes the offset to write at and returns the offset after what it wrote; the caller
 * makes room first (see the `most*` functions for how much).
 */

/** The longest UTF-8 a UTF-16 code unit of a JSON string can take: a `\u001f` escape. */
const MOST_BYTES_PER_UNIT = 6;
/** A JSON string's quotes. */
const QUOTES_BYTES = 2;

/** The most bytes {@link writeJsonString} writes for `text`. */
export function mostJsonStringBytes(text: string): number {
  return text.length * MOST_BYTES_PER_UNIT + QUOTES_BYTES;
}

/**
 * The most bytes {@link writeNumber} and {@link writeHundredths} write: the longest JSON number
 * (`-1.2345678901234567e-308`).
 */
export const MOST_NUMBER_BYTES = 24;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Below this code unit a character is a control that JSON escapes. */
const FIRST_PRINTABLE = 0x20;
/** From this code unit on a character takes more than one byte of UTF-8. */
const FIRST_NON_ASCII = 0x80;
const DOT = 0x2e;
const ZERO = 0x30;
/** Decimal digits. */
const TEN = 10;
const HUNDRED = 100;

/**
 * Copies `bytes` (a piece of a line encoded once, such as its constant keys) to `at`: byte by byte,
 * which for the few dozen bytes of such a piece costs less than a call of `TypedArray.set`.
 */
export function writeBytes(buffer: Buffer, at: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; i++) buffer[at + i] = bytes[i] as number;
  return at + bytes.length;
}

/**
 * Writes `text` (ASCII, nothing JSON escapes) byte for byte; the caller knows it is such text (a
 * key, a constant piece of a line).
 */
export function writeAscii(buffer: Buffer, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) buffer[at + i] = text.charCodeAt(i);
  return at + text.length;
}

/**
 * Writes `text` as a JSON string: printable ASCII without quote or backslash byte for byte (ids,
 * methods), anything else through `JSON.stringify` and the Buffer's UTF-8 encoder.
 */
export function writeJsonString(buffer: Buffer, at: number, text: string): number {
  const start = at;
  buffer[at++] = QUOTE;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < FIRST_PRINTABLE || unit >= FIRST_NON_ASCII || unit === QUOTE || unit === BACKSLASH)
      return start + buffer.write(JSON.stringify(text), start, "utf8");
    buffer[at++] = unit;
  }
  buffer[at++] = QUOTE;
  return at;
}

/** Writes a number as JSON: a non-negative integer digit by digit, anything else through its text. */
export function writeNumber(buffer: Buffer, at: number, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0)
    return at + buffer.write(JSON.stringify(value), at, "latin1");
  return writeUnsigned(buffer, at, value);
}

/** Writes a non-negative safe integer's decimal digits. */
export function writeUnsigned(buffer: Buffer, at: number, value: number): number {
  let digits = 1;
  for (let rest = value; rest >= TEN; rest = Math.floor(rest / TEN)) digits++;
  return writeDigits(buffer, at, value, digits);
}

/**
 * Writes the last `width` decimal digits of a non-negative safe integer, zero-padded on the left
 * (`7` in width 3 is `007`).
 */
export function writeDigits(buffer: Buffer, at: number, value: number, width: number): number {
  let rest = value;
  for (let i = width - 1; i >= 0; i--) {
    buffer[at + i] = ZERO + (rest % TEN);
    rest = Math.floor(rest / TEN);
  }
  return at + width;
}

/**
 * Writes a non-negative number rounded to hundredths as `JSON.stringify(Math.round(value * 100) / 100)`
 * would: `12`, `12.5`, `12.05`. That number's shortest text is the two-decimal one with its trailing
 * zeros dropped, for any value below 2^53 / 100.
 */
export function writeHundredths(buffer: Buffer, at: number, value: number): number {
  const hundredths = Math.round(value * HUNDRED);
  let end = writeUnsigned(buffer, at, Math.floor(hundredths / HUNDRED));
  const fraction = hundredths % HUNDRED;
  if (fraction === 0) return end;
  buffer[end++] = DOT;
  buffer[end++] = ZERO + Math.floor(fraction / TEN);
  if (fraction % TEN !== 0) buffer[end++] = ZERO + (fraction % TEN);
  return end;
}
