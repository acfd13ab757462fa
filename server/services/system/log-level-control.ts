import { Code, ConnectError } from "@connectrpc/connect";
import { LOG_LEVELS, type LogLevel } from "../../config.js";
import { type Logger, writesAt } from "../../logger.js";
import type { Sql } from "../../store/db.js";
import type { Principal } from "../iam/principal.js";
import { oneOf } from "../request-validation.js";
import { requireInstallationAdmin } from "./installation-admin.js";

/** A level change: the level now, and the one before it. */
export interface LogLevelChange {
  readonly level: LogLevel;
  readonly previous: LogLevel;
}

/**
 * The log level of this process, read and changed while it runs: turning the access log off or
 * debug lines on without a restart, on the one process that answers (each process of a scaled-out
 * installation has its own, as with `AGENTPLANE_LOG_LEVEL`, which sets it at start). Only an admin
 * of the installation's organization may (PERMISSION_DENIED otherwise).
 */
export interface LogLevelControl {
  /** The level this process writes from now. */
  read(principal: Principal): Promise<LogLevel>;
  /** Sets the level; `level` is checked here (INVALID_ARGUMENT naming the accepted levels). */
  change(principal: Principal, level: string | undefined): Promise<LogLevelChange>;
}

/** What the level-change line is written at: when either level writes it, an operator sees it. */
const CHANGE_LINE_LEVEL: LogLevel = "info";

/**
 * Creates the control of `log`'s level. A logger without a changeable level (a test's recorder)
 * answers FAILED_PRECONDITION. The change is logged at info by whichever of the two levels writes
 * info lines, so that a log that shows the change also shows who made it.
 */
export function createLogLevelControl(deps: { sql: Sql; log: Logger }): LogLevelControl {
  const setting = () => {
    const level = deps.log.level;
    if (!level) {
      throw new ConnectError("this process's log level is fixed at start", Code.FailedPrecondition);
    }
    return level;
  };
  return {
    async read(principal) {
      await requireInstallationAdmin(deps.sql, principal, "the log level");
      return setting().current;
    },
    async change(principal, requested) {
      const level = oneOf(requested, LOG_LEVELS, "level");
      await requireInstallationAdmin(deps.sql, principal, "the log level");
      const current = setting();
      const previous = current.current;
      const line = () =>
        deps.log.info("log level changed", {
          newLevel: level,
          previousLevel: previous,
          apiKeyId: principal.apiKey?.id ?? null,
        });
      if (writesAt(level, CHANGE_LINE_LEVEL)) {
        current.set(level);
        line();
      } else {
        line();
        current.set(level);
      }
      return { level, previous };
    },
  };
}
