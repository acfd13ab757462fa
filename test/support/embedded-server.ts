import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type AgentplaneProcess, startAgentplaneProcess } from "./agentplane-process.js";

/** A server started as `npm start` starts it, with embedded Postgres. */
export interface EmbeddedServer extends AgentplaneProcess {
  /** Every JSON log line written so far, parsed (start-up included). */
  logs(): Record<string, unknown>[];
}

/**
 * Starts `server/main.ts` with no DATABASE_URL, so it runs embedded Postgres under `dataDir`, with
 * info-level JSON logs for the test to read.
 */
export async function startEmbeddedServer(
  dataDir: string,
  apiKey: string,
  env: Record<string, string> = {},
): Promise<EmbeddedServer> {
  const proc = await startAgentplaneProcess({
    DATABASE_URL: "",
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_API_KEY: apiKey,
    AGENTPLANE_LOG_LEVEL: "info",
    ...env,
  });
  const logs = () => {
    const lines = proc.stderr().split("\n");
    lines.pop(); // A line still being written.
    return lines
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  };
  return { ...proc, logs };
}

/** The pid of the postmaster of the cluster under a server's data directory, from its lock file. */
export async function postmasterPidOf(dataDir: string): Promise<number> {
  const content = await readFile(join(dataDir, "postgres", "postmaster.pid"), "utf8");
  return Number(content.split("\n", 1)[0]);
}

/** True when the process exists and is not a zombie. */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  return stat !== "" && stat.charAt(stat.lastIndexOf(")") + 2) !== "Z";
}

/** A request's status, `detail` and how long it took to answer. */
export interface TimedAnswer {
  status: number;
  detail: unknown;
  ms: number;
}

/** Sends a request and times its answer; a request still unanswered after `timeoutMs` rejects. */
export async function timedFetch(url: string, init: RequestInit, timeoutMs: number): Promise<TimedAnswer> {
  const started = performance.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  const body = (await res.json().catch(() => ({}))) as { detail?: unknown };
  return { status: res.status, detail: body.detail, ms: performance.now() - started };
}

/** Pids of the live (non-zombie) children of a process: a postmaster's backends and helpers. */
export async function childrenOf(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] !== "Z" && Number(fields[1]) === pid) children.push(Number(entry));
  }
  return children;
}
