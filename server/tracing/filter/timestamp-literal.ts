/** An ISO 8601 date or date-time; the time, seconds, fraction (up to microseconds) and zone are optional. */
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,6})?)?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * The canonical form (`YYYY-MM-DDTHH:MM:SS[.ffffff]<zone>`) of an ISO 8601 timestamp written in a
 * filter, or undefined when it is not one or names an impossible date or time. A timestamp without
 * a zone is UTC, whatever the database session's time zone.
 */
export function normalizeTimestamp(text: string): string | undefined {
  const m = ISO.exec(text.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = "00", mi = "00", s = "00", fraction = "", zone = "Z"] = m;
  const date = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  const valid =
    date.getUTCFullYear() === Number(y) &&
    date.getUTCMonth() === Number(mo) - 1 &&
    date.getUTCDate() === Number(d) &&
    Number(h) < 24 &&
    Number(mi) < 60 &&
    Number(s) < 60;
  if (!valid) return undefined;
  const offset = zone.toUpperCase() === "Z" ? "Z" : normalizeOffset(zone);
  if (offset === undefined) return undefined;
  return `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction}${offset}`;
}

/** `+05`, `+0530` or `+05:30` → `+05:30`; undefined beyond ±23:59. */
function normalizeOffset(zone: string): string | undefined {
  const digits = zone.slice(1).replace(":", "");
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2)) : 0;
  if (hours > 23 || minutes > 59) return undefined;
  return `${zone[0]}${digits.slice(0, 2)}:${String(minutes).padStart(2, "0")}`;
}
