import type { LogLevel } from "./config.js";
import { stderrLines } from "./stderr-lines.js";

/** Structured fields attached to a log line. */
export type LogFields = Record<string, unknown>;

/** Writes one JSON object per line to stderr; stdout is kept for what a person must read. */
export interface Logger {
  /** Logs at debug level. */
  debug(message: string, fields?: LogFields): void;
  /** Logs at info level. */
  info(message: string, fields?: LogFields): void;
  /** Logs at warn level. */
  warn(message: string, fields?: LogFields): void;
  /** Logs at error level. */
  error(message: string, fields?: LogFields): void;
  /**
   * The level it writes from, which an administrator may change while the process runs
   * (`PUT /internal/log-level`). Absent on a logger that keeps every line it is given (a test's
   * recorder): its level is then the configured one, fixed.
   */
  readonly level?: LogLevelSetting;
}

/** A logger's level, changeable at run time: lines below it are dropped before they are built. */
export interface LogLevelSetting {
  /** The lowest level written now. */
  readonly current: LogLevel;
  /** Writes lines at `level` and above from now on. */
  set(level: LogLevel): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Whether a logger at `level` writes lines at `at`. */
export function writesAt(level: LogLevel, at: LogLevel): boolean {
  return ORDER[at] >= ORDER[level];
}

/**
 * Creates a logger that drops lines below `level` (changeable later through its `level`). Lines go
 * to `write`, or by default to stderr in batches (stderr-lines.ts: one write per 10 ms window at
 * most, flushed at exit and on a crash).
 */
export function createLogger(
  level: LogLevel,
  write: (line: string) => void = stderrLines().write,
): Logger & { readonly level: LogLevelSetting } {
  let current = level;
  let threshold = ORDER[level];
  const log = (at: LogLevel, message: string, fields?: LogFields) => {
    if (ORDER[at] < threshold) return;
    write(`${formatLine(at, message, fields)}\n`);
  };
  return {
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
    level: {
      get current() {
        return current;
      },
      set(next) {
        current = next;
        threshold = ORDER[next];
      },
    },
  };
}

/**
 * One line's JSON: time, level and message, then the fields. Fields without errors and without a
 * key of the line's own are encoded in one JSON.stringify of the object as given (the access log
 * writes one per request: copying it into a new object first would cost more than encoding it).
 */
function formatLine(at: LogLevel, message: string, fields: LogFields | undefined): string {
  const time = isoNow();
  try {
    if (fields !== undefined && isPlain(fields)) {
      const head = `{"time":"${time}","level":"${at}","message":${JSON.stringify(message)}`;
      const encoded = JSON.stringify(fields);
      return encoded === "{}" ? `${head}}` : `${head},${encoded.slice(1)}`;
    }
    return JSON.stringify({ time, level: at, message, ...serializeFields(fields) });
  } catch (error) {
    // A field JSON cannot hold (a cycle, a BigInt): the line still goes out, saying so.
    return JSON.stringify({ time, level: at, message, unloggable: String(error) });
  }
}

/** The second {@link isoNow} last formatted, and its ISO text up to the seconds. */
let cachedSecond = Number.NaN;
let cachedSecondText = "";

/**
 * `new Date().toISOString()`, formatting the date only once a second: at a few thousand lines a
 * second, building the date each time is a third of what a line costs.
 */
function isoNow(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    // "2026-11-26T17:04:29.000Z" without ".000Z".
    cachedSecondText = new Date(second * 1000).toISOString().slice(0, -5);
  }
  const ms = now - second * 1000;
  return `${cachedSecondText}.${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`;
}

/** Whether `fields` encode as they are: no Error values, no key that the line itself sets. */
function isPlain(fields: LogFields): boolean {
  if ("time" in fields || "level" in fields || "message" in fields) return false;
  for (const key in fields) if (fields[key] instanceof Error) return false;
  return true;
}

function serializeFields(fields: LogFields | undefined): LogFields | undefined {
  if (!fields) return undefined;
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    out[key] = value instanceof Error ? serializeError(value, 0) : value;
  }
  return out;
}

/** Causes logged below an error: enough for a driver error wrapped twice, and bounded if they loop. */
const MAX_CAUSES = 3;

/** An error as one JSON object: its name, message, code (a SQLSTATE, a Node code), stack and causes. */
function serializeError(error: Error, depth: number): LogFields {
  const fields: LogFields = { name: error.name, message: error.message };
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") fields.code = code;
  fields.stack = error.stack;
  if (error.cause instanceof Error && depth < MAX_CAUSES)
    fields.cause = serializeError(error.cause, depth + 1);
  return fields;
}
