/**
 * Trace timestamps as clients send them: ISO 8601 strings (the JS SDK's `start_time`, with six
 * fractional digits) or epoch milliseconds (its `end_time`, from `Date.now()`). Both become an ISO
 * string with microseconds, which Postgres stores without losing the SDK's sub-millisecond order.
 */

import { digitsAt, isRealDateTime } from "./fixed-width-time.js";

const ISO =
  /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;
/** Digits of a microsecond fraction. */
const MICRO_DIGITS = 6;
/** Latest epoch milliseconds accepted (9999-12-31T23:59:59.999Z): four-digit years, as ISO 8601 and dotted_order need. */
const MAX_EPOCH_MS = 253_402_300_799_999;
/** The accepted range, for error messages: from the epoch (as LangSmith) to the last four-digit year. */
const RANGE_TEXT = "from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z";

/**
 * The UTC ISO form (`YYYY-MM-DDTHH:MM:SS.ffffffZ`) of a timestamp, or an
 * error message naming `field` when it is neither a parsable ISO string nor epoch milliseconds.
 * A zone-less ISO string is taken as UTC.
 */
export function normalizeTimestamp(value: unknown, field: string): { iso: string } | { error: string } {
  if (typeof value === "number") {
    if (!Number.isFinite(value))
      return { error: `${field} must be an ISO 8601 string or epoch milliseconds, got ${value}` };
    if (value < 0 || value > MAX_EPOCH_MS)
      return { error: `${field} must be a time ${RANGE_TEXT}, got ${value}` };
    const micros = Math.round(value * 1000);
    const ms = Math.floor(micros / 1000);
    const fraction = String(micros % 1000).padStart(3, "0");
    return { iso: `${new Date(ms).toISOString().slice(0, 23)}${fraction}Z` };
  }
  if (typeof value !== "string")
    return { error: `${field} must be an ISO 8601 string or epoch milliseconds` };
  if (isCanonical(value)) return { iso: value };
  const match = ISO.exec(value.trim());
  const [, date, hm, seconds = "00", fraction = "", zone] = match ?? [];
  const micro = fraction.padEnd(MICRO_DIGITS, "0").slice(0, MICRO_DIGITS);
  const ms = Date.parse(`${date}T${hm}:${seconds}.${micro.slice(0, 3)}${zoneOf(zone)}`);
  if (!match || Number.isNaN(ms)) {
    return {
      error: `${field} must be an ISO 8601 timestamp such as 2024-09-19T17:16:48.521691Z, got ${JSON.stringify(value)}`,
    };
  }
  if (ms < 0 || ms > MAX_EPOCH_MS)
    return { error: `${field} must be a time ${RANGE_TEXT}, got ${JSON.stringify(value)}` };
  return { iso: `${new Date(ms).toISOString().slice(0, 23)}${micro.slice(3)}Z` };
}

/** Length of the canonical form `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
const CANONICAL_LENGTH = 27;
/** Where the canonical form has each separator, and which. */
const CANONICAL_SEPARATORS: readonly [number, string][] = [
  [4, "-"],
  [7, "-"],
  [10, "T"],
  [13, ":"],
  [16, ":"],
  [19, "."],
  [26, "Z"],
];

/**
 * Whether `text` is already the form this module returns, for a real instant in the accepted range:
 * what the JS SDK sends as `start_time`, returned as it is without a regular expression or a `Date`.
 */
function isCanonical(text: string): boolean {
  if (text.length !== CANONICAL_LENGTH) return false;
  for (const [at, separator] of CANONICAL_SEPARATORS) if (text[at] !== separator) return false;
  const year = digitsAt(text, 0, 4);
  return (
    year >= 1970 &&
    digitsAt(text, 20, 6) >= 0 &&
    isRealDateTime(
      year,
      digitsAt(text, 5, 2),
      digitsAt(text, 8, 2),
      digitsAt(text, 11, 2),
      digitsAt(text, 14, 2),
      digitsAt(text, 17, 2),
    )
  );
}

/** A zone suffix JavaScript's ISO parser reads: `Z` or `±HH:MM`. */
function zoneOf(zone: string | undefined): string {
  if (zone === undefined || zone.toUpperCase() === "Z") return "Z";
  const digits = zone.slice(1).replace(":", "");
  return `${zone[0]}${digits.slice(0, 2)}:${digits.slice(2).padEnd(2, "0")}`;
}
