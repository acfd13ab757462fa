import { randomUUID } from "node:crypto";
import { chmod, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { writeHeapSnapshot } from "node:v8";
import type { Sql } from "../../store/db.js";
import type { Principal } from "../iam/principal.js";
import { requireInstallationAdmin } from "./installation-admin.js";

/** Where heap snapshots go, under the data directory. */
export const HEAP_DUMP_DIR = "heapdumps";

/** Writes V8 heap snapshots of this process for its administrators. */
export interface HeapDumper {
  /**
   * Writes a snapshot and returns its absolute path. Only an admin of the installation's own
   * organization (the one bootstrap created) may: a snapshot holds everything in memory, every
   * tenant's data and the server's secrets included. PERMISSION_DENIED for anyone else.
   */
  write(principal: Principal): Promise<string>;
}

/**
 * Creates the dumper. Writing a snapshot stops the event loop while V8 walks the heap (about a
 * second per few hundred MB) and the file is about the size of the heap: this is for investigating
 * a leak, not for routine use.
 */
export function createHeapDumper(deps: { sql: Sql; dataDir: string }): HeapDumper {
  const dir = join(deps.dataDir, HEAP_DUMP_DIR);
  return {
    async write(principal) {
      await requireInstallationAdmin(deps.sql, principal, "a heap dump");
      // Only the server's user may read snapshots: they hold secrets.
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const stamp = new Date().toISOString().replace(/[:.]/g, "-");
      const path = join(dir, `heap-${stamp}-${process.pid}-${randomUUID().slice(0, 8)}.heapsnapshot`);
      writeHeapSnapshot(path);
      await chmod(path, 0o600);
      return path;
    },
  };
}
