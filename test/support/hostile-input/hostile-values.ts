import type { JsonValue } from "@bufbuild/protobuf";

/**
 * The hostile values a fuzzer puts into requests, by kind. Each list covers the edges the server
 * must refuse with a 4xx (or accept) without ever answering 5xx.
 */

/** Strings Postgres cannot store in text or jsonb: the NUL character and lone UTF-16 surrogates. */
export const UNSTORABLE_STRINGS: readonly string[] = [
  "a\u0000b",
  "\u0000",
  "\ud800",
  "x\udc00y",
  "\udc00\ud800",
];

/** Numbers beyond int32, int64, float64 and JSON, negative where counts are expected. */
export const HOSTILE_NUMBERS: readonly JsonValue[] = [
  -1,
  0,
  -2_147_483_649,
  2_147_483_648,
  4_294_967_296,
  9_007_199_254_740_992,
  1e308,
  -1e308,
  5e-324,
  "9223372036854775808",
  "-9223372036854775809",
  "18446744073709551616",
  "NaN",
  "Infinity",
  "-Infinity",
  "1e400",
];

/** Timestamps at and beyond the edges of RFC 3339, JavaScript dates and Postgres, and invalid ones. */
export const HOSTILE_TIMESTAMPS: readonly string[] = [
  "0001-01-01T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "9999-12-31T23:59:59.999999999Z",
  "9999-12-31T23:30:00Z",
  "10000-01-01T00:00:00Z",
  "+275760-09-13T00:00:00.000Z",
  "-000001-01-01T00:00:00Z",
  "1970-01-01T00:00:00Z",
  "2024-02-30T00:00:00Z",
  "2024-01-01T24:00:00Z",
  "2024-01-01T00:00:00+25:00",
  "now",
];

/** Values of the wrong JSON type for any field. */
export const WRONG_TYPES: readonly JsonValue[] = [{}, [], "x", 7, true, null, [[]], { a: {} }, [{ a: 1 }]];

/** Path variable and query values as sent in the URL: bad escapes, NUL, invalid UTF-8, huge. */
export const HOSTILE_URL_VALUES: readonly string[] = [
  "%00",
  "a%00b",
  "%ZZ",
  "%",
  "%E0%A4%A",
  "%ED%A0%80",
  "%FF",
  "%C0%AF",
  "%2F..%2F",
  "..",
  "x".repeat(5000),
];

/** Query values that are well-formed in the URL but wrong for the field. */
export const WRONG_QUERY_VALUES: readonly string[] = [
  "x",
  "-1",
  "99999999999999999999",
  "1e400",
  "NaN",
  "0001-01-01T00:00:00Z",
  "9999-12-31T23:30:00Z",
  "10000-01-01T00:00:00Z",
];

/** JSON texts that do not parse, or parse into something no route takes. */
export const MALFORMED_JSON_BODIES: readonly string[] = [
  "{",
  "{,}",
  '{"a":}',
  "nul",
  "[1,]",
  '"unterminated',
  '{"a":1}}',
  "\uFEFF{}",
  "null",
  "[]",
  "123",
  '"s"',
  '{"a":1e999}',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
];

/** Nesting far beyond any limit, and just beyond a plausible one. */
export const NESTING_DEPTHS: readonly number[] = [10_000, 200];

/** `[[[...]]]` nested `depth` levels. */
export function nestedArrays(depth: number): string {
  return `${"[".repeat(depth)}${"]".repeat(depth)}`;
}

/** `{"a":{"a":...1}}` nested `depth` levels. */
export function nestedObjects(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}
