import { type CellResult, runClosedLoop } from "./closed-loop.js";
import { type CpuMeter, cpuSecondsBetween } from "./cpu-meter.js";

/** A closed-loop cell, and the CPU its server spent per call (NaN without a meter). */
export interface MeteredResult extends CellResult {
  /** CPU ms of the server and its Postgres backends per call, warm-up calls included. */
  cpuMs: number;
}

/**
 * {@link runClosedLoop}, with `meter` read before and after: every call (warm-up included, as the
 * meter spans them all) divides the CPU the server and its backends spent.
 */
export async function runMeteredLoop(
  meter: CpuMeter | undefined,
  call: (seq: number) => Promise<void>,
  concurrency: number,
  timing: { warmupMs: number; durationMs: number },
): Promise<MeteredResult> {
  let calls = 0;
  const before = await meter?.read();
  const result = await runClosedLoop(
    async (seq) => {
      await call(seq);
      calls++;
    },
    concurrency,
    timing,
  );
  const after = await meter?.read();
  const cpuMs = before && after ? (cpuSecondsBetween(before, after) * 1000) / calls : Number.NaN;
  return { ...result, cpuMs };
}
