import { readFile } from "node:fs/promises";

/**
 * The largest `field` of /proc/<pid>/status among `pids`, in bytes: `VmRSS`, the resident memory
 * now, or `VmHWM`, its peak since the process started. 0 where a process is gone or there is no
 * /proc (elsewhere than Linux).
 */
export async function residentBytes(pids: readonly number[], field: "VmRSS" | "VmHWM"): Promise<number> {
  let largest = 0;
  for (const pid of pids) {
    const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
    const kib = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
    largest = Math.max(largest, kib * 1024);
  }
  return largest;
}
