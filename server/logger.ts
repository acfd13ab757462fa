import type { LogLevel } from "./config.js";
import { mostJsonStringBytes, writeAscii, writeBytes, writeDigits } from "./json-bytes.js";
import { type LineSink, stderrLines } from "./stderr-lines.js";

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
  /**
   * Its lines as bytes, for a line written on every request (the access log), built without the
   * strings and objects `info` takes; absent on a logger that takes only messages and fields (a
   * test's recorder).
   */
  readonly bytes?: LogBytes;
}

/**
 * Lines written as UTF-8 straight into a buffer: {@link open} writes the line's time, level and
 * message, the caller writes its fields (each as `,"key":value`, with json-bytes.ts) into
 * {@link buffer}, and {@link close} ends and queues it. The caller checks the level first
 * ({@link writesAt} of `level.current`), and writes nothing else in between.
 */
export interface LogBytes {
  /** Starts a line at level `at` with room for `most` bytes of fields; returns where they go. */
  open(at: LogLevel, message: string, most: number): number;
  /** The buffer an open line is written into. */
  readonly buffer: Buffer;
  /** Ends the open line, whose fields end at `end`, and queues it. */
  close(end: number): void;
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
 * to `write`, or by default to stderr in batches (stderr-lines.ts: one write per 100 ms window at
 * most, flushed at exit and on a crash).
 */
export function createLogger(
  level: LogLevel,
  write?: (line: string) => void,
): Logger & { readonly level: LogLevelSetting; readonly bytes: LogBytes } {
  const sink = write === undefined ? stderrLines() : undefined;
  const writeLine = write ?? (sink as LineSink).write;
  let current = level;
  let threshold = ORDER[level];
  const log = (at: LogLevel, message: string, fields?: LogFields) => {
    if (ORDER[at] < threshold) return;
    writeLine(`${formatLine(at, message, fields)}\n`);
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
    bytes: sink ? sinkBytes(sink) : textBytes(writeLine),
  };
}

/** `{"time":"` and the rest of a line's start around its time, level and message. */
const TIME_KEY = '{"time":"';
const LEVEL_KEY = '","level":"';
const MESSAGE_KEY = '","message":';
/** `2026-11-26T17:04:29.123Z`. */
const ISO_TIME_BYTES = 24;
/** The longest level's name. */
const LEVEL_BYTES = 5;
/** Digits of the milliseconds in a line's time. */
const MS_DIGITS = 3;
/** The line's closing brace and newline. */
const LINE_END = "}\n";
const LINE_END_BYTES = 2;

/** The most bytes a line's start and end take around its fields. */
function mostFrameBytes(message: string): number {
  const keys = TIME_KEY.length + LEVEL_KEY.length + MESSAGE_KEY.length;
  return keys + ISO_TIME_BYTES + LEVEL_BYTES + mostJsonStringBytes(message) + LINE_END_BYTES;
}

/** The second {@link writeLineStart} last wrote, and `{"time":"` with its ISO text up to the point. */
let bytesSecond = Number.NaN;
let secondBytes: Uint8Array = new Uint8Array(0);
/**
 * The level and message {@link writeLineStart} last wrote, and the bytes from the time's `Z` through
 * the message (`Z","level":"info","message":"request"`): a line written on every request repeats
 * both, so they are encoded once.
 */
let bytesLevel: LogLevel | undefined;
let bytesMessage = "";
let levelMessageBytes: Uint8Array = new Uint8Array(0);

/** Writes a line's start, as {@link formatLine} does, and returns where its fields go. */
function writeLineStart(buffer: Buffer, start: number, at: LogLevel, message: string): number {
  const now = Date.now();
  const second = Math.floor(now / MS_PER_SECOND);
  if (second !== bytesSecond) {
    bytesSecond = second;
    secondBytes = Buffer.from(`${TIME_KEY}${secondText(now)}.`, "latin1");
  }
  if (at !== bytesLevel || message !== bytesMessage) {
    bytesLevel = at;
    bytesMessage = message;
    levelMessageBytes = Buffer.from(`Z${LEVEL_KEY}${at}${MESSAGE_KEY}${JSON.stringify(message)}`, "utf8");
  }
  let end = writeBytes(buffer, start, secondBytes);
  const ms = now - second * MS_PER_SECOND;
  end = writeDigits(buffer, end, ms, MS_DIGITS);
  return writeBytes(buffer, end, levelMessageBytes);
}

/** {@link LogBytes} written straight into the batch of `sink`. */
function sinkBytes(sink: LineSink): LogBytes {
  return {
    open(at, message, most) {
      return writeLineStart(sink.batch, sink.reserve(mostFrameBytes(message) + most), at, message);
    },
    get buffer() {
      return sink.batch;
    },
    close(end) {
      sink.commit(writeAscii(sink.batch, end, LINE_END));
    },
  };
}

/** A line's room in {@link textBytes} to begin with: an access line's. */
const FIRST_SCRATCH_BYTES = 1024;

/** {@link LogBytes} of a logger that writes text: each line is built in a scratch buffer, then decoded. */
function textBytes(write: (line: string) => void): LogBytes {
  let scratch = Buffer.allocUnsafe(FIRST_SCRATCH_BYTES);
  return {
    open(at, message, most) {
      const need = mostFrameBytes(message) + most;
      if (need > scratch.length) scratch = Buffer.allocUnsafe(need);
      return writeLineStart(scratch, 0, at, message);
    },
    get buffer() {
      return scratch;
    },
    close(end) {
      write(scratch.toString("utf8", 0, writeAscii(scratch, end, LINE_END)));
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

/** Milliseconds in a second. */
const MS_PER_SECOND = 1000;

/** The second {@link isoNow} last formatted, and its ISO text up to the seconds. */
let cachedSecond = Number.NaN;
let cachedSecondText = "";

/**
 * `new Date().toISOString()`, formatting the date only once a second: at a few thousand lines a
 * second, building the date each time is a third of what a line costs.
 */
function isoNow(): string {
  const now = Date.now();
  const ms = now % MS_PER_SECOND;
  return `${secondText(now)}.${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`;
}

/** The ISO text of `now` (ms since the epoch) up to its seconds, made once a second. */
function secondText(now: number): string {
  const second = Math.floor(now / MS_PER_SECOND);
  if (second !== cachedSecond) {
    cachedSecond = second;
    // "2026-11-26T17:04:29.000Z" without ".000Z".
    cachedSecondText = new Date(second * MS_PER_SECOND).toISOString().slice(0, -5);
  }
  return cachedSecondText;
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
