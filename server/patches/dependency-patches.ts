/**
 * Every patch agentplane makes to a dependency, applied and verified in one place at start-up
 * ({@link applyDependencyPatches}, called first by startApp), never as an import side effect. Each
 * patch's file names the upstream behaviour it works around:
 *
 * - postgres-driver-repair.mjs: the postgres.js driver's files, repaired by `npm install`'s
 *   postinstall step; verified here, and a server whose install skipped it does not start.
 * - pg-boss-manager.ts: pg-boss's Manager completion writes and fetches; applied here (and by every
 *   queue, which cannot run safely without it).
 * - langchain-callback-manager-copy.ts: a linear CallbackManager.copy; a speed patch, so when the
 *   installed @langchain/core has another copy the library's own is kept and a line says so.
 * - postgres-query-context-tags.ts: the driver's Query.prototype.handle, installed by startApp only
 *   when custom encryption is on; it verifies itself when installed.
 */
import type { Logger } from "../logger.js";
import {
  CALLBACK_MANAGER_COPY_PATCH,
  installLinearCallbackManagerCopy,
} from "./langchain-callback-manager-copy.js";
import { applyPgBossManagerPatch, PG_BOSS_MANAGER_PATCH } from "./pg-boss-manager.js";
import { postgresDriverRepairState } from "./postgres-driver-repair.mjs";

/** The name start-up reports the driver repair by. */
export const POSTGRES_DRIVER_REPAIR = "postgres.js driver repair (server/patches/postgres-driver-repair.mjs)";

/** What {@link applyDependencyPatches} found: the patches in place and those knowingly left out. */
export interface DependencyPatchReport {
  applied: string[];
  fellBack: string[];
}

/**
 * Applies every unconditional dependency patch and verifies those applied at install time (the
 * driver's files under `options.driverRoot`, the installed driver by default).
 * Throws, naming the patch, when a patch the server cannot run safely without is missing; logs a
 * warning for a speed patch left out. Idempotent.
 */
export async function applyDependencyPatches(
  log: Pick<Logger, "warn">,
  options: { driverRoot?: string } = {},
): Promise<DependencyPatchReport> {
  const report: DependencyPatchReport = { applied: [], fellBack: [] };
  const driver = await postgresDriverRepairState(options.driverRoot);
  if (driver.unrepaired.length > 0)
    throw new Error(
      `dependency patch "${POSTGRES_DRIVER_REPAIR}" is not applied to postgres ${driver.version} ` +
        `(${driver.unrepaired.join(", ")}): the install skipped its postinstall step; ` +
        "run `node server/patches/postgres-driver-repair.mjs` (or `npm install` without --ignore-scripts)",
    );
  report.applied.push(POSTGRES_DRIVER_REPAIR);
  applyPgBossManagerPatch();
  report.applied.push(PG_BOSS_MANAGER_PATCH);
  if (installLinearCallbackManagerCopy()) report.applied.push(CALLBACK_MANAGER_COPY_PATCH);
  else {
    report.fellBack.push(CALLBACK_MANAGER_COPY_PATCH);
    log.warn(
      `dependency patch "${CALLBACK_MANAGER_COPY_PATCH}" left out: the installed @langchain/core has a copy it was not checked against; runs use the library's own (correct, slower with tracing)`,
    );
  }
  return report;
}
