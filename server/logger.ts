import type { LogLevel } from "./config.js";

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
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Creates a logger that drops lines below `level`. */
export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  const log = (at: LogLevel, message: string, fields?: LogFields) => {
    if (ORDER[at] < ORDER[level]) return;
    const time = new Date().toISOString();
    let line: string;
    try {
      line = JSON.stringify({ time, level: at, message, ...serializeFields(fields) });
    } catch (error) {
      // A field JSON cannot hold (a cycle, a BigInt): the line still goes out, saying so.
      line = JSON.stringify({ time, level: at, message, unloggable: String(error) });
    }
    write(`${line}\n`);
  };
  return {
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
  };
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
