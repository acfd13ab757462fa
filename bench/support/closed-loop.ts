import { performance } from "node:perf_hooks";
import { percentile } from "./percentile.js";

/** What one closed-loop run measured. */
export interface CellResult {
  /** Successful calls per second of the measured window. */
  rps: number;
  /** Median latency of the successful calls, in ms. */
  p50: number;
  /** 99th-percentile latency of the successful calls, in ms. */
  p99: number;
  /** Failed calls in the measured window. */
  errors: number;
  /** The first failure's message, if any. */
  firstError: string | undefined;
}

/**
 * Closed loop: `concurrency` workers issue calls back to back for warm-up + duration; calls that
 * complete inside the measured window count (successes towards req/s and latency, failures as
 * errors). `call` gets a sequence number, unique within the run.
 */
export async function runClosedLoop(
  call: (seq: number) => Promise<void>,
  concurrency: number,
  timing: { warmupMs: number; durationMs: number },
): Promise<CellResult> {
  const measureFrom = performance.now() + timing.warmupMs;
  const end = measureFrom + timing.durationMs;
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let seq = 0;
  const worker = async () => {
    for (let started = performance.now(); started < end; started = performance.now()) {
      let failure: unknown;
      try {
        await call(seq++);
      } catch (error) {
        failure = error ?? "unknown failure";
      }
      const finished = performance.now();
      if (finished < measureFrom || finished > end) continue;
      if (failure === undefined) latencies.push(finished - started);
      else {
        errors += 1;
        firstError ??= failure instanceof Error ? failure.message : String(failure);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: latencies.length / (timing.durationMs / 1000),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    errors,
    firstError,
  };
}
