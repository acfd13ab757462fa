/**
 * The process lifecycle an operator sees through `npm start` (what Docker, systemd and a terminal
 * drive): SIGTERM to the npm process, or Ctrl-C to its process group, stops the server and its
 * embedded Postgres gracefully with a final log line and leaves no process behind; a busy port is
 * refused at once, naming the setting to change, before any Postgres starts.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { chmod, mkdtemp, readdir, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { childrenOf, isAlive } from "../support/embedded-server.js";

const execFileAsync = promisify(execFile);

const API_KEY = "ap_pt_process_lifecycle_test_key_0";
/** Start-up with a fresh embedded cluster (initdb, migrations) on a loaded 2-core machine. */
const START_MS = 90_000;
/** A graceful stop: the server's grace (10 s default) plus Postgres's fast shutdown, with room. */
const STOP_MS = 40_000;
/** Refusing a busy port takes loading TypeScript and binding once: seconds, never a Postgres start. */
const BUSY_PORT_EXIT_MS = 20_000;

interface NpmStart {
  readonly child: ChildProcess;
  readonly dataDir: string;
  /** Resolves with npm's exit code (or signal) once it exits. */
  readonly exited: Promise<number | string>;
  output(): { stdout: string; stderr: string };
}

const started: NpmStart[] = [];

/** Runs `npm start` in its own process group (as a terminal or a supervisor would) on a temp data dir. */
async function npmStart(env: Record<string, string> = {}): Promise<NpmStart> {
  const dataDir = await mkdtemp(join(tmpdir(), "agentplane-lifecycle-"));
  // As root, embedded Postgres runs as the `postgres` user, which must be able to enter the directory.
  await chmod(dataDir, 0o711);
  const child = spawn("npm", ["start"], {
    env: {
      ...process.env,
      DATABASE_URL: "",
      AGENTPLANE_PORT: "0",
      AGENTPLANE_DATA_DIR: dataDir,
      AGENTPLANE_API_KEY: API_KEY,
      AGENTPLANE_LOG_LEVEL: "info",
      ...env,
    },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown")),
  );
  const run = { child, dataDir, exited, output: () => ({ stdout, stderr }) };
  started.push(run);
  return run;
}

/** Waits for the "listening on" line; rejects if npm exits first or it takes longer than `ms`. */
async function listening(run: NpmStart, ms: number): Promise<string> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const match = /listening on (http:\/\/\S+)\n/.exec(run.output().stdout);
    if (match?.[1]) return match[1];
    if (run.child.exitCode !== null) break;
    await delay(100);
  }
  throw new Error(`npm start did not listen: ${run.output().stderr.slice(-2000)}`);
}

/** Every live process below `pid`, children first found first. */
async function descendantsOf(pid: number): Promise<number[]> {
  const all: number[] = [];
  for (let frontier = [pid]; frontier.length > 0; ) {
    const next: number[] = [];
    for (const parent of frontier) next.push(...(await childrenOf(parent)));
    all.push(...next);
    frontier = next;
  }
  return all;
}

/** Pids of processes whose command line names the data directory (the embedded postmaster does). */
async function processesNaming(dataDir: string): Promise<string> {
  try {
    const { stdout } = await execFileAsync("pgrep", ["-f", dataDir]);
    return stdout.trim();
  } catch {
    return ""; // pgrep exits 1 when nothing matches.
  }
}

async function withinMs<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function logLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

afterEach(async () => {
  for (const run of started.splice(0)) {
    // A failed test may leave its server running: stop the whole group it started, then its files.
    if (run.child.exitCode === null && run.child.pid) {
      try {
        process.kill(-run.child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await rm(run.dataDir, { recursive: true, force: true });
  }
});

describe("npm start", () => {
  /** Starts, signals as `send` does, and checks the server and its Postgres stopped gracefully. */
  async function expectGracefulStop(send: (npm: ChildProcess) => void, signal: string): Promise<void> {
    const run = await npmStart();
    const baseUrl = await listening(run, START_MS);
    expect((await fetch(`${baseUrl}/ok`)).status).toBe(200);
    const npmPid = run.child.pid as number;
    const tree = await descendantsOf(npmPid);
    expect(await processesNaming(run.dataDir)).not.toBe("");

    send(run.child);
    await withinMs(run.exited, STOP_MS, "npm exiting after the signal");

    const left = [];
    for (const pid of tree) if (await isAlive(pid)) left.push(pid);
    expect(left).toEqual([]);
    expect(await processesNaming(run.dataDir)).toBe("");
    const lines = logLines(run.output().stderr);
    expect(lines.at(-1)).toMatchObject({ level: "info", message: "agentplane stopped", signal });
    expect(
      lines.some((line) => line.message === "shutdown step overran the grace; going on without it"),
    ).toBe(false);
    expect(lines.some((line) => line.message === "second signal: exiting without waiting")).toBe(false);
    await expect(fetch(`${baseUrl}/ok`)).rejects.toThrow();
  }

  it(
    "stops the server and its embedded Postgres on SIGTERM to the npm process",
    () => expectGracefulStop((npm) => npm.kill("SIGTERM"), "SIGTERM"),
    START_MS + STOP_MS,
  );

  it(
    "stops gracefully on Ctrl-C, which signals npm and the server at once",
    () => expectGracefulStop((npm) => process.kill(-(npm.pid as number), "SIGINT"), "SIGINT"),
    START_MS + STOP_MS,
  );

  it(
    "refuses a busy port at once, naming AGENTPLANE_PORT, before any Postgres starts",
    async () => {
      const blocker = net.createServer();
      await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
      const port = (blocker.address() as net.AddressInfo).port;
      try {
        const run = await npmStart({ AGENTPLANE_PORT: String(port) });
        const code = await withinMs(run.exited, BUSY_PORT_EXIT_MS, "refusing a busy port");
        expect(code).not.toBe(0);
        const { stderr, stdout } = run.output();
        expect(stderr).toContain(`port ${port} on 127.0.0.1 is already in use`);
        expect(stderr).toContain("AGENTPLANE_PORT");
        expect(stdout).not.toContain("admin API key");
        expect(await readdir(run.dataDir)).toEqual([]);
        expect(await processesNaming(run.dataDir)).toBe("");
      } finally {
        await new Promise((resolve) => blocker.close(resolve));
      }
    },
    BUSY_PORT_EXIT_MS + 10_000,
  );
});
