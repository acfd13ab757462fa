import { readdirSync, readFileSync } from "node:fs";
import type { Sql } from "../../server/store/db.js";
import { type CpuMeter, cpuMeter } from "../support/cpu-meter.js";

/** Fields of /proc/<pid>/stat after the command name: pgrp is the 5th field, utime the 14th, stime the 15th. */
const PGRP_AFTER_COMM = 2;
const UTIME_AFTER_COMM = 11;
const STIME_AFTER_COMM = 12;

/**
 * A meter of several agentplane processes on one database (an api and a worker process): each
 * process plus the database's client backends, every pid counted once.
 */
export function processesMeter(admin: Sql, database: string, pids: number[]): CpuMeter {
  const meters = pids.map((pid) => cpuMeter(admin, database, pid));
  return {
    async read() {
      const ticks = new Map<number, number>();
      for (const meter of meters) for (const [pid, t] of await meter.read()) ticks.set(pid, t);
      return ticks;
    },
  };
}

/**
 * A meter of every process in process group `pgid`: the JS reference server, which the CLI runs
 * through tsx in processes of its own group, and which keeps its state in memory (no database).
 */
export function processGroupMeter(pgid: number): CpuMeter {
  return {
    async read() {
      const ticks = new Map<number, number>();
      for (const entry of readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
          const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
          if (Number(fields[PGRP_AFTER_COMM]) !== pgid) continue;
          ticks.set(Number(entry), Number(fields[UTIME_AFTER_COMM]) + Number(fields[STIME_AFTER_COMM]));
        } catch {
          // The process ended between the listing and the read: it no longer costs anything.
        }
      }
      return ticks;
    },
  };
}
