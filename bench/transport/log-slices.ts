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
 * switch itself lies outside every slice. Neighbouring slices share the machine's conditions; the
 * result is calls per CPU second at the first level over the second (for a CPU-bound server, its
 * req/s ratio), pooled over all pairs so that every call weighs the same, with a 95 % interval from
 * resampling the pairs (a bootstrap). With both levels alike (`--slice-levels info,info`) the same
 * run is its own control: the interval of a ratio that is 1 says what the run can resolve.
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
 * the same, so a slice that a burst of other load starved of calls weighs little, where a median of
 * per-pair ratios would count it as much as any other.
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
 * A 95 % interval of {@link pooledRatio}: the pairs resampled with replacement (a bootstrap). The
 * pair, not the slice, is resampled, so each resample keeps neighbours together as they were measured.
 */
function bootstrapInterval(pairs: readonly Pair[]): [number, number] {
  if (pairs.length === 0) return [Number.NaN, Number.NaN];
  const random = seededRandom(BOOTSTRAP_SEED);
  const ratios: number[] = [];
  for (let r = 0; r < BOOTSTRAP_RESAMPLES; r++) {
    const sample = pairs.map(() => pairs[Math.floor(random() * pairs.length)] as Pair);
    ratios.push(pooledRatio(sample));
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

/** The slices of one cell: switches the level, reads the CPU, waits, reads it again, 2 × pairs times. */
async function cutSlices(deps: LogSliceDeps<string>, loadEnds: number): Promise<Slice[]> {
  const [first, second] = deps.levels;
  const slices: Slice[] = [];
  for (let i = 0; i < 2 * deps.pairs && Date.now() < loadEnds; i++) {
    // Pair k runs first-second when k is even and second-first when odd.
    const level = (i % 2 === 0) === (Math.floor(i / 2) % 2 === 0) ? first : second;
    await deps.setLevel(level);
    const from = Date.now();
    const before = await deps.cpuSeconds();
    await sleep(deps.sliceMs);
    const after = await deps.cpuSeconds();
    slices.push({ level, from, to: Date.now(), cpuSeconds: after - before });
  }
  return slices;
}

/**
 * Runs one load cell per protocol and concurrency, cut into slices, and prints one line for each.
 * Returns false when a median misses the aim (only when the levels differ: a control has no aim)
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
      const ratio = pooledRatio(pairs);
      // Each pair's own ratio too: their median is robust to a slice that a burst of other load
      // made costly, which the pooled ratio weighs by its calls.
      const perPair = pairs
        .map((p) => p.theirsCpu / p.theirsCalls / (p.oursCpu / p.oursCalls))
        .filter((r) => Number.isFinite(r) && r > 0);
      const [low, high] = bootstrapInterval(pairs);
      const usPerCall = (cpu: number, n: number) => (cpu * US_PER_S) / n;
      const sum = (pick: (p: Pair) => number) => pairs.reduce((total, p) => total + pick(p), 0);
      const oursUs = usPerCall(
        sum((p) => p.oursCpu),
        sum((p) => p.oursCalls),
      );
      const theirsUs = usPerCall(
        sum((p) => p.theirsCpu),
        sum((p) => p.theirsCalls),
      );
      const aimed = first !== second;
      if (aimed && !(ratio >= AIM_RATIO)) ok = false;
      const verdict = aimed ? ` (aim ≥ ${AIM_RATIO}) ${ratio >= AIM_RATIO ? "PASS" : "FAIL"}` : " (control)";
      summaries.push(
        `c=${concurrency} ${deps.label(protocol)}: ${first} / ${second} by server CPU per call, ` +
          `${pairs.length} pairs of ${deps.sliceMs} ms slices: ${ratio.toFixed(3)} ` +
          `(95 % interval ${low.toFixed(3)}–${high.toFixed(3)}; median of pairs ${median(perPair).toFixed(3)}); ${oursUs.toFixed(0)} µs/call at ${first}, ` +
          `${theirsUs.toFixed(0)} at ${second}: ${(oursUs - theirsUs).toFixed(1)} µs more${verdict}`,
      );
      console.log(summaries.at(-1));
    }
  }
  console.log(`\n${summaries.join("\n")}`);
  return ok;
}
