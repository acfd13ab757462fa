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
    write(
      `${JSON.stringify({ time: new Date().toISOString(), level: at, message, ...serializeFields(fields) })}\n`,
    );
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
    out[key] =
      value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value;
  }
  return out;
}
