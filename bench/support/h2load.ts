import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { CellResult } from "./closed-loop.js";
import { percentile } from "./percentile.js";

const execFileAsync = promisify(execFile);

/** Bytes of h2load's report and log a cell may print: a 5 s cell at 10,000 req/s logs ~250 KB. */
const OUTPUT_MAX_BYTES = 64 * 1024 * 1024;
/** The log's columns: start (µs since the epoch), HTTP status, µs until the end of the response. */
const START_COLUMN = 0;
const STATUS_COLUMN = 1;
const DURATION_COLUMN = 2;
const US_PER_MS = 1000;

/** h2load's path when it is installed (Debian's `nghttp2-client`), else undefined. */
export function findH2load(): string | undefined {
  try {
    return execFileSync("which", ["h2load"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** One h2load cell: a closed loop of the same request. */
export interface H2loadCell {
  url: string;
  headers: Record<string, string>;
  /** The request body (sent with POST); GET without one. */
  body: Uint8Array | undefined;
  /** HTTP/1.1 (`--h1`, one request at a time per connection) instead of h2c. */
  h1: boolean;
  /** Connections. */
  clients: number;
  /** Requests in flight per connection (h2c streams; 1 on HTTP/1.1). */
  streams: number;
  warmupMs: number;
  durationMs: number;
  /**
   * Bytes of response body every good answer has. h2load checks only the HTTP status, and a gRPC
   * error is a 200 with an empty body and a `grpc-status` trailer: answers short of this many bytes
   * in total are counted as errors.
   */
  answerBytes: number;
}

/** One h2load cell's results. */
export interface H2loadResult extends CellResult {
  /** Good answers of the warm-up and the window together (what the server's CPU time was spent on). */
  answered: number;
  /**
   * When each 200 answer of the measured window ended, in ms since the epoch (Date.now's clock),
   * in order: for a bench that splits one cell into slices of time.
   */
  answeredAt: number[];
}

/**
 * Runs h2load, nghttp2's HTTP/2 and HTTP/1.1 load generator written in C, for one cell: a client
 * that costs the machine far less than a Node client, so the server is what is measured. Latency
 * percentiles come from its per-request log, which holds the measured window only.
 */
export async function runH2load(h2load: string, cell: H2loadCell): Promise<H2loadResult> {
  const dir = mkdtempSync(join(tmpdir(), "h2load-"));
  try {
    const bodyFile = join(dir, "body");
    const logFile = join(dir, "log.tsv");
    if (cell.body) writeFileSync(bodyFile, cell.body);
    const args = [
      ...(cell.h1 ? ["--h1"] : []),
      `--clients=${cell.clients}`,
      `--max-concurrent-streams=${cell.streams}`,
      // h2load takes whole numbers with a unit: milliseconds keep fractions of a second.
      ...(cell.warmupMs > 0 ? [`--warm-up-time=${Math.round(cell.warmupMs)}ms`] : []),
      `--duration=${Math.round(cell.durationMs)}ms`,
      ...(cell.body ? [`--data=${bodyFile}`] : []),
      `--log-file=${logFile}`,
      ...Object.entries(cell.headers).map(([name, value]) => `--header=${name}: ${value}`),
      cell.url,
    ];
    const { stdout } = await execFileAsync(h2load, args, { maxBuffer: OUTPUT_MAX_BYTES });
    const latencies: number[] = [];
    const answeredAt: number[] = [];
    let bad = 0;
    let firstError: string | undefined;
    for (const line of readFileSync(logFile, "utf8").split("\n")) {
      if (!line) continue;
      const columns = line.split("\t");
      const status = Number(columns[STATUS_COLUMN]);
      if (status === 200) {
        const durationUs = Number(columns[DURATION_COLUMN]);
        latencies.push(durationUs / US_PER_MS);
        answeredAt.push((Number(columns[START_COLUMN]) + durationUs) / US_PER_MS);
      }
      // Status 0: still in flight when the window closed, cut off by h2load itself.
      else if (status !== 0) {
        bad += 1;
        firstError ??= `HTTP status ${status}`;
      }
    }
    const done = Number(/requests: \d+ total, \d+ started, (\d+) done/.exec(stdout)?.[1] ?? 0);
    // Requests that broke (a reset stream, a closed connection); non-2xx answers are in the log.
    const broken = Number(/(\d+) errored/.exec(stdout)?.[1] ?? 0);
    const data = Number(/\((\d+)\) data/.exec(stdout)?.[1] ?? 0);
    // The data count includes the warm-up's answers: short of the window's share means bad answers.
    const short = Math.max(0, Math.ceil((latencies.length * cell.answerBytes - data) / cell.answerBytes));
    if (short > 0) firstError ??= `${short} answer(s) without the expected ${cell.answerBytes}-byte body`;
    if (broken > 0) firstError ??= `h2load: ${broken} request(s) errored`;
    const ok = latencies.length - short;
    latencies.sort((a, b) => a - b);
    answeredAt.sort((a, b) => a - b);
    return {
      answeredAt,
      rps: (ok * 1000) / cell.durationMs,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      answered: Math.floor(data / cell.answerBytes),
      errors: bad + short + broken + (done === 0 ? 1 : 0),
      firstError: done === 0 ? `h2load completed no request: ${stdout.slice(-300)}` : firstError,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
