/**
 * Fixed-width date-time fields read straight from their character codes: the fast path of trace
 * timestamps and dotted_order stamps, which the SDKs always send in one canonical layout. Every
 * run carries two or three of them, and a regular expression, `Date.parse` and `toISOString` per
 * field were a tenth of the CPU of trace ingest's validation. Anything these readers do not accept
 * goes to the callers' general parsers, which decide (and word the error).
 */

/** Character code of `0`. */
const ZERO = 0x30;

/** The number written by the `count` ASCII digits at `start`, or -1 when any is not a digit. */
export function digitsAt(text: string, start: number, count: number): number {
  let value = 0;
  for (let i = start; i < start + count; i++) {
    const digit = text.charCodeAt(i) - ZERO;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * Whether year, month, day, hour, minute and second name a real instant of the proleptic Gregorian
 * calendar, as `Date` reads one (no leap second, no hour 24): day within its month, February 29
 * only in leap years. Negative fields (a {@link digitsAt} miss) are not.
 */
export function isRealDateTime(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): boolean {
  if (year < 0 || month < 1 || month > 12 || day < 1) return false;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return false;
  if (day <= 28) return true;
  if (month === 2) return day === 29 && (year % 4 === 0 ? year % 100 !== 0 || year % 400 === 0 : false);
  return day <= (month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31);
}

/** Whether the character at `at` in `text` is a lowercase or uppercase hex digit. */
function isHexAt(text: string, at: number): boolean {
  const c = text.charCodeAt(at);
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

/** Length of a UUID in its 8-4-4-4-12 text form. */
export const UUID_LENGTH = 36;

/** Whether the {@link UUID_LENGTH} characters at `start` are a UUID in 8-4-4-4-12 hex form (either case). */
export function isUuidAt(text: string, start: number): boolean {
  for (let i = 0; i < UUID_LENGTH; i++) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (text.charCodeAt(start + i) !== 0x2d /* - */) return false;
    } else if (!isHexAt(text, start + i)) {
      return false;
    }
  }
  return true;
}
