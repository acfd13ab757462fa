import { setTimeout as sleep } from "node:timers/promises";
import { median } from "../support/round-ratios.js";

/**
 * `bench:transport --log-slices N`: the cost of the access log measured inside one server process,
 * under one uninterrupted load. Two processes of the same checkout differ by a few percent for their
 * whole life (what V8 compiled, where its heap lies), and on a shared machine other people's load
 * swings the CPU a call costs by tens of percent from one second to the next: both are more than the
 * few percent in question. So one server process serves one long h2load cell per protocol and
 * concurrency while the bench switches its log level every slice (`PUT /internal/log-level`, as an
 * operator would), 2 × N slices alternating between the two levels (the order flips every pair, so
 * neither level always goes first). A slice's CPU is read from the server's threads (schedstat)
 * after the switch and at its end, and its calls are those h2load saw answered in between; the
 * switch itself lies outside every slice. Neighbouring slices share the machine's conditions, so
 * each pair gives one ratio: calls per CPU second at the first level over the second (for a
 * CPU-bound server, its req/s ratio). The figure is their trimmed mean (of the logs, so that a ratio
 * and its inverse weigh alike), with a 95 % interval from resampling the pairs (a bootstrap). With
 * both levels alike (`--slice-levels info,info`) the same run is its own control: a ratio of 1 whose
 * interval says what the run can resolve.
 *
 * Why trimmed: on a shared machine a slice now and then has a burst of other load (or a major GC)
 * in it, which makes its calls cost up to tens of times the usual CPU. Pooling all calls (as this
 * bench did before) lets those few slices move a cell by several per cent from one run to the next,
 * and the A/A control with it; the middle of the per-pair ratios does not move with them.
 */

/** Two log levels compared: the one whose cost is asked, then the one it is a ratio of. */
export type SliceLevels = readonly [string, string];

/** One h2load cell's good answers. */
export interface SliceLoad {
  /** When each good answer of the measured window ended, in ms since the epoch, in order. */
  answeredAt: readonly number[];
  errors: number;
  firstError: string | undefined;
}

/** What a slice run needs from the transport bench. */
export interface LogSliceDeps<P extends string> {
  /** The protocols and concurrencies measured, each one load cell cut into slices. */
  protocols: readonly P[];
  concurrencies: readonly number[];
  /** Pairs of slices per protocol and concurrency. */
  pairs: number;
  /** Each slice's length. */
  sliceMs: number;
  /** Calls before the first slice, not measured. */
  warmupMs: number;
  levels: SliceLevels;
  /** A protocol's name in the report. */
  label(protocol: P): string;
  /** Sets the server's log level (through its admin endpoint). */
  setLevel(level: string): Promise<void>;
  /** The server process's CPU seconds so far, all its threads. */
  cpuSeconds(): Promise<number>;
  /** Runs one closed-loop load cell of `durationMs` after `warmupMs`. */
  load(protocol: P, concurrency: number, warmupMs: number, durationMs: number): Promise<SliceLoad>;
}

/** One slice: its level, when its calls were counted, and the server CPU they cost. */
interface Slice {
  level: string;
  from: number;
  to: number;
  cpuSeconds: number;
}

/** The aim: the access log keeps at least this share of the calls a CPU second serves. */
const AIM_RATIO = 0.95;
/** Microseconds in a second. */
const US_PER_S = 1e6;
/**
 * Time a slice switch takes beyond the slice (the PUT and two schedstat readings take a few ms on a
 * busy machine): the load runs this much longer per slice, so that it outlasts the last one.
 */
const SWITCH_ALLOWANCE_MS = 100;

/** One pair of neighbouring slices: the server CPU seconds and the calls of each. */
interface Pair {
  oursCpu: number;
  oursCalls: number;
  theirsCpu: number;
  theirsCalls: number;
}

/**
 * Calls per CPU second at the first level over the second, pooled over `pairs`: every call weighs
 * the same (printed beside the trimmed figure, which the verdict reads).
 */
function pooledRatio(pairs: readonly Pair[]): number {
  let oursCpu = 0;
  let oursCalls = 0;
  let theirsCpu = 0;
  let theirsCalls = 0;
  for (const p of pairs) {
    oursCpu += p.oursCpu;
    oursCalls += p.oursCalls;
    theirsCpu += p.theirsCpu;
    theirsCalls += p.theirsCalls;
  }
  return oursCalls / oursCpu / (theirsCalls / theirsCpu);
}

/**
 * The share of per-pair ratios left out at each end before averaging: on the A/A control of
 * 200 pairs it halved the spread between quarters of a run against the pooled ratio, and cut more
 * than the one pair in ten a burst of other load spoils on a machine shared by several benches.
 */
const TRIM = 0.2;

/** The log of one pair's calls per CPU second at the first level over the second; NaN without calls. */
function pairLogRatio(p: Pair): number {
  return Math.log(p.oursCalls / p.oursCpu / (p.theirsCalls / p.theirsCpu));
}

/** The mean of the middle of the sorted `logs` ({@link TRIM} off each end), as a ratio again. */
function trimmedRatio(logs: readonly number[]): number {
  const sorted = [...logs].sort((x, y) => x - y);
  const cut = Math.floor(sorted.length * TRIM);
  const kept = sorted.slice(cut, sorted.length - cut);
  if (kept.length === 0) return Number.NaN;
  return Math.exp(kept.reduce((sum, x) => sum + x, 0) / kept.length);
}

/** Resamples of the pairs behind the interval: enough for its 2.5th and 97.5th percentiles to settle. */
const BOOTSTRAP_RESAMPLES = 2000;
/** The interval's tails: 2.5 % each side. */
const TAIL = 0.025;
/** A fixed seed: the same slices give the same interval. */
const BOOTSTRAP_SEED = 0x5eed;

/** A small deterministic generator of uniform numbers in [0, 1) (mulberry32). */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/**
 * A 95 % interval of {@link trimmedRatio}: the pairs' ratios resampled with replacement (a
 * bootstrap). The pair, not the slice, is resampled, so each resample keeps neighbours together as
 * they were measured.
 */
function bootstrapInterval(logs: readonly number[]): [number, number] {
  if (logs.length === 0) return [Number.NaN, Number.NaN];
  const random = seededRandom(BOOTSTRAP_SEED);
  const ratios: number[] = [];
  for (let r = 0; r < BOOTSTRAP_RESAMPLES; r++) {
    const sample = logs.map(() => logs[Math.floor(random() * logs.length)] as number);
    ratios.push(trimmedRatio(sample));
  }
  ratios.sort((x, y) => x - y);
  const at = (fraction: number) => ratios[Math.floor(fraction * (ratios.length - 1))] ?? Number.NaN;
  return [at(TAIL), at(1 - TAIL)];
}

/** How many of the sorted `times` lie in [from, to). */
function countBetween(times: readonly number[], from: number, to: number): number {
  const firstAtOrAfter = (t: number) => {
    let low = 0;
    let high = times.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((times[mid] ?? Number.POSITIVE_INFINITY) < t) low = mid + 1;
      else high = mid;
    }
    return low;
  };
  return firstAtOrAfter(to) - firstAtOrAfter(from);
}

/**
 * Now in ms since the epoch to the microsecond (h2load's log is in µs): Date.now's whole
 * milliseconds would move a slice's edge by up to 1 % of a 100 ms slice's calls.
 */
function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The server's CPU seconds now, and the moment they stand for: the middle of the reading, which
 * takes a few hundred µs of file reads on a busy machine, so that a slice's calls and its CPU
 * are counted over the same span.
 */
async function readCpuAt(deps: LogSliceDeps<string>): Promise<{ at: number; cpuSeconds: number }> {
  const start = preciseNow();
  const cpuSeconds = await deps.cpuSeconds();
  return { at: (start + preciseNow()) / 2, cpuSeconds };
}

/** The slices of one cell: switches the level, reads the CPU, waits, reads it again, 2 × pairs times. */
async function cutSlices(deps: LogSliceDeps<string>, loadEnds: number): Promise<Slice[]> {
  const [first, second] = deps.levels;
  const slices: Slice[] = [];
  for (let i = 0; i < 2 * deps.pairs && Date.now() < loadEnds; i++) {
    // Pair k runs first-second when k is even and second-first when odd.
    const level = (i % 2 === 0) === (Math.floor(i / 2) % 2 === 0) ? first : second;
    await deps.setLevel(level);
    const before = await readCpuAt(deps);
    await sleep(deps.sliceMs);
    const after = await readCpuAt(deps);
    slices.push({ level, from: before.at, to: after.at, cpuSeconds: after.cpuSeconds - before.cpuSeconds });
  }
  return slices;
}

/**
 * The A/A control inside an A/B run, in the same units as its figure: pairs k and k + 1 meet at
 * two neighbouring slices of one level (…B | B…, …A | A…), set apart by a level switch to the level
 * they already had, as an A/B pair is by a real one. The first of them (just after a real switch)
 * over the second, trimmed like the figure, is 1 within what the run resolves, unless switching
 * itself costs something (code optimised for one level thrown away at the other), which the
 * figure would then count as the log's cost.
 */
function controlLogs(slices: readonly Slice[], calls: readonly number[]): number[] {
  const logs: number[] = [];
  for (let i = 1; i + 1 < slices.length; i += 2) {
    const ours = slices[i];
    const theirs = slices[i + 1];
    if (!ours || !theirs || ours.level !== theirs.level) continue;
    logs.push(
      pairLogRatio({
        oursCpu: ours.cpuSeconds,
        oursCalls: calls[i] ?? 0,
        theirsCpu: theirs.cpuSeconds,
        theirsCalls: calls[i + 1] ?? 0,
      }),
    );
  }
  return logs.filter(Number.isFinite);
}

/**
 * Runs one load cell per protocol and concurrency, cut into slices, and prints one line for each.
 * Returns false when a figure misses the aim (only when the levels differ: a control has no aim)
 * or a call failed.
 */
export async function runLogSlices<P extends string>(deps: LogSliceDeps<P>): Promise<boolean> {
  const [first, second] = deps.levels;
  let ok = true;
  const summaries: string[] = [];
  for (const concurrency of deps.concurrencies) {
    for (const protocol of deps.protocols) {
      await deps.setLevel(first);
      const durationMs = 2 * deps.pairs * (deps.sliceMs + SWITCH_ALLOWANCE_MS);
      const loadEnds = Date.now() + deps.warmupMs + durationMs;
      const loading = deps.load(protocol, concurrency, deps.warmupMs, durationMs);
      await sleep(deps.warmupMs);
      const slices = await cutSlices(deps as LogSliceDeps<string>, loadEnds);
      const load = await loading;
      if (load.errors > 0) {
        ok = false;
        console.log(
          `  ${deps.label(protocol)} c=${concurrency}: ${load.errors} error(s): ${load.firstError}`,
        );
      }
      const calls = slices.map((s) => countBetween(load.answeredAt, s.from, s.to));
      const pairs: Pair[] = [];
      for (let pair = 0; 2 * pair + 1 < slices.length; pair++) {
        // In pair order: the slice at the first level, then the one at the second.
        const [a, b] = pair % 2 === 0 ? [2 * pair, 2 * pair + 1] : [2 * pair + 1, 2 * pair];
        const ours = slices[a];
        const theirs = slices[b];
        if (!ours || !theirs) continue;
        pairs.push({
          oursCpu: ours.cpuSeconds,
          oursCalls: calls[a] ?? 0,
          theirsCpu: theirs.cpuSeconds,
          theirsCalls: calls[b] ?? 0,
        });
      }
      // A pair a burst starved of calls altogether has no ratio; the trim takes the rest.
      const logs = pairs.map(pairLogRatio).filter(Number.isFinite);
      const ratio = trimmedRatio(logs);
      const [low, high] = bootstrapInterval(logs);
      const control = controlLogs(slices, calls);
      const [controlLow, controlHigh] = bootstrapInterval(control);
      // A typical call's CPU at the second level (the median slice's, as immune to bursts as the
      // figure), and what the figure makes of it at the first.
      const theirsUs = median(
        pairs.filter((p) => p.theirsCalls > 0).map((p) => (p.theirsCpu * US_PER_S) / p.theirsCalls),
      );
      const moreUs = theirsUs / ratio - theirsUs;
      const aimed = first !== second;
      if (aimed && !(ratio >= AIM_RATIO)) ok = false;
      const verdict = aimed ? ` (aim ≥ ${AIM_RATIO}) ${ratio >= AIM_RATIO ? "PASS" : "FAIL"}` : " (control)";
      summaries.push(
        `c=${concurrency} ${deps.label(protocol)}: ${first} / ${second} by server CPU per call, ` +
          `${logs.length} pairs of ${deps.sliceMs} ms slices: ${ratio.toFixed(3)} ` +
          `(trimmed mean of the pairs' ratios, 95 % interval ${low.toFixed(3)}–${high.toFixed(3)}; ` +
          `all calls pooled ${pooledRatio(pairs).toFixed(3)}); a typical call's ${theirsUs.toFixed(0)} µs at ` +
          `${second} takes ${moreUs.toFixed(1)} µs more at ${first}${verdict}; A/A control from the same ` +
          `slices (neighbours at one level, ${control.length} pairs): ${trimmedRatio(control).toFixed(3)} ` +
          `(${controlLow.toFixed(3)}–${controlHigh.toFixed(3)})`,
      );
      console.log(summaries.at(-1));
    }
  }
  console.log(`\n${summaries.join("\n")}`);
  return ok;
}
