import { spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BenchAppSetup, REPO_ROOT } from "./bench-app.js";
import type { PgWireCounts } from "./pg-wire-meter.js";

/** The environment variable that carries the {@link BenchAppSetup} (JSON), so the key stays out of the process list. */
export const AGENTPLANE_CHILD_ENV = "BENCH_SERVER";
/**
 * What the bench asks the child on its IPC channel: its Postgres wire counters, or to start and stop
 * a CPU profile (written to `file`). Requests are answered one by one, in order.
 */
export type ChildRequest =
  | { kind: "wire" }
  | { kind: "profile-start" }
  | { kind: "profile-stop"; file: string };
/** The child process entry point. */
const CHILD_ENTRY = fileURLToPath(new URL("./agentplane-child.ts", import.meta.url));

/** What the child is told: the server's setup and the checkout to run it from. */
export interface ChildSetup extends BenchAppSetup {
  root: string;
}

/**
 * The Node flags that checkout's `npm start` gives the server (package.json `config.nodeFlags`), so
 * that a bench runs each checkout's server as it runs in production; none when it names none.
 */
export function serverNodeFlags(root: string): string[] {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    config?: { nodeFlags?: unknown };
  };
  const flags = manifest.config?.nodeFlags;
  return typeof flags === "string" ? flags.split(/\s+/).filter((flag) => flag !== "") : [];
}

/** agentplane running in a child process. */
export interface AgentplaneChild {
  /** Where it listens on 127.0.0.1. */
  port: number;
  /** Its process id (to read its memory). */
  pid: number;
  /** Its traffic to Postgres so far (pg-wire-meter.ts). */
  wire(): Promise<PgWireCounts>;
  /** Starts a V8 CPU profile of the process. */
  startProfile(): Promise<void>;
  /** Stops the profile {@link startProfile} started and writes it (`.cpuprofile` JSON) to `file`. */
  stopProfile(file: string): Promise<void>;
  /** Sends SIGTERM and waits for the process to exit (it drains first); a no-op once it has exited. */
  stop(): Promise<void>;
}

/**
 * Runs agentplane in a child process (bench/support/agentplane-child.ts), so the load generator does
 * not share the server's event loop, and resolves once it listens. With `profileDir`, the child writes
 * its V8 CPU profile (`.cpuprofile`) there when stopped. `root` is the checkout to run (this one by
 * default): the child runs in that directory, with that checkout's server code and node_modules.
 * With `stderrFile`, the child's log lines are appended there instead of to the bench's stderr.
 */
export async function spawnAgentplane(
  setup: BenchAppSetup,
  profileDir: string | undefined,
  root: string = REPO_ROOT,
  stderrFile?: string,
): Promise<AgentplaneChild> {
  const profile = profileDir ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [];
  const flags = [...serverNodeFlags(root), ...profile];
  // A file, as a log collector would take the lines, rather than the bench's own terminal.
  const stderr = stderrFile === undefined ? "inherit" : openSync(stderrFile, "a");
  const child = spawn(process.execPath, [...flags, "--import", "tsx", CHILD_ENTRY], {
    cwd: root,
    env: { ...process.env, [AGENTPLANE_CHILD_ENV]: JSON.stringify({ ...setup, root } satisfies ChildSetup) },
    stdio: ["ignore", "pipe", stderr, "ipc"],
  });
  if (typeof stderr === "number") closeSync(stderr);
  const port = await new Promise<number>((done, fail) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) done((JSON.parse(line) as { port: number }).port);
    });
    child.once("exit", (code) => fail(new Error(`agentplane process exited with ${code}`)));
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    await exited;
  };
  // One request at a time: an answer names no request, so it belongs to the one in flight.
  let asking: Promise<unknown> = Promise.resolve();
  const askNow = async (request: ChildRequest): Promise<unknown> => {
    const answered = once(child, "message") as Promise<[{ ok: boolean; reply: unknown }]>;
    child.send(request);
    const [{ ok, reply }] = await answered;
    if (!ok) throw new Error(`the agentplane child refused ${request.kind}: ${String(reply)}`);
    return reply;
  };
  const ask = (request: ChildRequest): Promise<unknown> => {
    const next = asking.then(
      () => askNow(request),
      () => askNow(request),
    );
    asking = next;
    return next;
  };
  return {
    port,
    pid: child.pid ?? 0,
    wire: () => ask({ kind: "wire" }) as Promise<PgWireCounts>,
    startProfile: () => ask({ kind: "profile-start" }).then(() => undefined),
    stopProfile: (file) => ask({ kind: "profile-stop", file }).then(() => undefined),
    stop,
  };
}
