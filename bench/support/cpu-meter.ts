import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import type { Sql } from "../../server/store/db.js";

/**
 * CPU time a server costs, read from Linux's /proc: its Node process plus the Postgres backends of
 * its database. On a shared machine, requests per second swing with other people's load; CPU
 * seconds per request swing far less, so a ratio of them shows a cost that throughput hides in
 * noise. Elsewhere than Linux the meter reads nothing and reports NaN.
 */
export interface CpuMeter {
  /** The processes' CPU ticks now, by pid. */
  read(): Promise<Map<number, number>>;
}

/** Ticks per second of /proc's utime and stime (`getconf CLK_TCK`; 100 on Linux). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || Number.NaN;
  } catch {
    return Number.NaN;
  }
})();
/** Fields of /proc/<pid>/stat after the command name: utime is the 14th field, stime the 15th. */
const UTIME_AFTER_COMM = 11;
const STIME_AFTER_COMM = 12;

/** User plus system ticks of `pid`, or undefined when it is gone (or there is no /proc). */
function ticksOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may hold spaces: fields are counted after it.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[UTIME_AFTER_COMM]) + Number(fields[STIME_AFTER_COMM]);
  } catch {
    return undefined;
  }
}

/**
 * A meter of the server process `serverPid` and of the client backends connected to `database`,
 * found through `admin` (a superuser connection, whose own backend is left out, as are autovacuum
 * workers: their work is the database's, not the requests').
 */
export function cpuMeter(admin: Sql, database: string, serverPid: number): CpuMeter {
  return {
    async read() {
      const backends = await admin<{ pid: number }[]>`
        select pid from pg_stat_activity
        where datname = ${database} and backend_type = 'client backend' and pid <> pg_backend_pid()`;
      const ticks = new Map<number, number>();
      for (const pid of [serverPid, ...backends.map((b) => b.pid)]) {
        const t = ticksOf(pid);
        if (t !== undefined) ticks.set(pid, t);
      }
      return ticks;
    },
  };
}

/**
 * A meter of one process alone: a server whose own work is the question (the cost of a layer of
 * the transport), where its Postgres backends are shared with other servers on the same database.
 */
export function processCpuMeter(pid: number): CpuMeter {
  return {
    async read() {
      const t = ticksOf(pid);
      return new Map(t === undefined ? [] : [[pid, t]]);
    },
  };
}

/** Nanoseconds in a second: /proc/<pid>/task/<tid>/schedstat counts run time in nanoseconds. */
const NS_PER_SECOND = 1e9;

/**
 * The run time of every thread of `pid` (the JavaScript thread, the garbage collector's and
 * libuv's), in ticks but at nanosecond resolution, from each thread's schedstat; undefined when it
 * is gone (or there is no /proc). Threads that ended between two readings drop out, which a
 * server's long-lived threads do not.
 */
function preciseTicksOf(pid: number): number | undefined {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        // The thread ended while the others were read.
      }
    }
    return (ns / NS_PER_SECOND) * TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * {@link processCpuMeter} at nanosecond resolution (schedstat) rather than in ticks of 10 ms, for
 * cells short enough that a tick is a sizable part of what they cost: 1 s of calls at 500 µs each
 * is 50 ticks, read with an error of up to two.
 */
export function preciseProcessCpuMeter(pid: number): CpuMeter {
  return {
    async read() {
      const t = preciseTicksOf(pid) ?? ticksOf(pid);
      return new Map(t === undefined ? [] : [[pid, t]]);
    },
  };
}

/** CPU seconds spent between two readings, by the processes present in both. */
export function cpuSecondsBetween(before: Map<number, number>, after: Map<number, number>): number {
  let ticks = 0;
  for (const [pid, t] of after) {
    const start = before.get(pid);
    if (start !== undefined) ticks += t - start;
  }
  return ticks / TICKS_PER_SECOND;
}
