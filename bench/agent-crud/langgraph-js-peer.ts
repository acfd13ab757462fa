import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The peer's own folder: package.json, langgraph.json and the graph; node_modules is gitignored. */
export const PEER_DIR = fileURLToPath(new URL("../peers/langgraph-js/", import.meta.url));
/** Where `langgraphjs dev` keeps its state (relative to its project): removed before and after a run. */
const STATE_DIR = join(PEER_DIR, ".langgraph_api");
/** The server loads its graphs with tsx first: on a 2-core machine that takes a few seconds. */
const START_TIMEOUT_MS = 60_000;
/** Pause between readiness probes. */
const PROBE_INTERVAL_MS = 200;
/** The server flushes its state files on SIGTERM (its exit hook waits up to 3 s); then it gets SIGKILL. */
const STOP_TIMEOUT_MS = 10_000;
/** The end of the server's output kept to explain a failed start. */
const OUTPUT_TAIL_CHARS = 4_000;
/** Environment variables that would turn on LangSmith tracing in the server. */
const TRACING_VARIABLES = [
  "LANGSMITH_TRACING_V2",
  "LANGCHAIN_TRACING_V2",
  "LANGSMITH_TRACING",
  "LANGCHAIN_TRACING",
];

/** A running JS reference server. */
export interface LangGraphJsServer {
  port: number;
  /** The CLI's package version, for the report. */
  version: string;
  /** The process group of the CLI and the server it runs (to read their memory). */
  pgid: number;
  stop(): Promise<void>;
}

/** Runs a command to completion, its output passed through; throws on a non-zero exit. */
async function run(command: string, args: string[]): Promise<void> {
  const child = spawn(command, args, { stdio: "inherit" });
  const [code] = (await once(child, "exit")) as [number | null];
  if (code !== 0) throw new Error(`${command} ${args.join(" ")} exited with ${code}`);
}

/**
 * Installs the peer (`npm install --prefix bench/peers/langgraph-js`) when its CLI is missing. The
 * root `npm install` and `npm test` never install it: only this bench needs it.
 */
export async function ensureLangGraphJsInstalled(): Promise<void> {
  if (existsSync(join(PEER_DIR, "node_modules", "@langchain", "langgraph-cli", "package.json"))) return;
  console.log(`installing the JS reference server into ${PEER_DIR} (first run only)`);
  await run("npm", ["install", "--prefix", PEER_DIR, "--no-audit", "--no-fund"]);
}

/** A port that was free a moment ago (the CLI takes a port number, not 0). */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (address === null || typeof address === "string") throw new Error("no TCP port");
  return address.port;
}

/**
 * Resolves once GET /info answers 200 (it needs no credentials, where /ok does under custom auth);
 * rejects when the process exits or the time is up.
 */
async function waitReady(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`langgraphjs dev exited with ${child.exitCode ?? child.signalCode}:\n${output()}`);
    const ok = await fetch(`http://127.0.0.1:${port}/info`).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
  }
  throw new Error(`langgraphjs dev did not answer /info within ${START_TIMEOUT_MS} ms:\n${output()}`);
}

/** Whether any process of group `pgid` is still alive. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Ends the process group the CLI leads (the CLI, tsx watch and the server): SIGTERM, then SIGKILL. */
async function stopGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  if (groupAlive(pgid)) process.kill(-pgid, "SIGTERM");
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (groupAlive(pgid) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS));
  if (groupAlive(pgid)) process.kill(-pgid, "SIGKILL");
}

/**
 * Starts `langgraphjs dev` (the JS reference Agent Server, in-memory, the way its users run it) on
 * a free loopback port with the peer's one-node graph (or the graphs file `configFile` names), and
 * waits for /info. Logging is at `warn` (agentplane runs at `error`), so neither server spends time
 * logging each request; no browser, no analytics, no tracing. Its state folder is removed first, so
 * it starts empty.
 */
export async function startLangGraphJs(configFile?: string): Promise<LangGraphJsServer> {
  await rm(STATE_DIR, { recursive: true, force: true });
  const cliPackage = join(PEER_DIR, "node_modules", "@langchain", "langgraph-cli", "package.json");
  const { version, bin } = JSON.parse(await readFile(cliPackage, "utf8")) as {
    version: string;
    bin: { langgraphjs: string };
  };
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    LOG_LEVEL: "warn",
    BROWSER: "none",
    LANGGRAPH_CLI_NO_ANALYTICS: "1",
  };
  for (const name of TRACING_VARIABLES) delete env[name];
  const cli = join(PEER_DIR, "node_modules", "@langchain", "langgraph-cli", bin.langgraphjs);
  const args = [cli, "dev", "--port", String(port), "--host", "127.0.0.1", "--no-browser"];
  if (configFile !== undefined) args.push("--config", configFile);
  // Its own process group, so that stopping it reaches the server the CLI spawns through tsx.
  const child = spawn(process.execPath, args, {
    cwd: PEER_DIR,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const stop = async () => {
    await stopGroup(child);
    await rm(STATE_DIR, { recursive: true, force: true });
  };
  try {
    await waitReady(port, child, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { port, version, pgid: child.pid ?? 0, stop };
}
