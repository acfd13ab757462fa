import { resolve } from "node:path";
import { numberValue } from "./cli-values.js";

/** A minimum measured window: shorter windows hold too few calls for a p99. */
const MIN_DURATION_S = 0.1;
/** Seconds to milliseconds. */
const MS_PER_S = 1000;

/** How a closed-loop bench measures: the settings its cells share. */
export interface LoopSettings {
  /** Measured window per cell. */
  durationMs: number;
  /** Calls before the window, not counted. */
  warmupMs: number;
  /** Times every cell runs; the report takes each cell's best round. */
  rounds: number;
  /** The concurrencies measured, each a cell of its own. */
  concurrencies: number[];
  /** Where the server child writes its V8 CPU profile, if anywhere. */
  profileDir: string | undefined;
}

/** A bench's defaults for {@link LoopSettings}, as the command line would give them. */
export interface LoopDefaults {
  /** `--duration-s`: seconds measured per cell. */
  durationS: string;
  /** `--warmup-s`: seconds of calls before each cell's window. */
  warmupS: string;
  /** `--rounds`: times every cell runs. */
  rounds: string;
  /** `--concurrency`: comma-separated concurrencies. */
  concurrency: string;
}

/**
 * The `parseArgs` options behind {@link LoopSettings}: `--duration-s`, `--warmup-s`, `--rounds`,
 * `--concurrency` (comma-separated) and `--profile-server <dir>`, defaulting to BENCH_DURATION_S,
 * BENCH_WARMUP_S, BENCH_ROUNDS and BENCH_CONCURRENCY, then to `defaults`.
 */
export function loopOptions(defaults: LoopDefaults) {
  const env = process.env;
  return {
    "duration-s": { type: "string", default: env.BENCH_DURATION_S ?? defaults.durationS },
    "warmup-s": { type: "string", default: env.BENCH_WARMUP_S ?? defaults.warmupS },
    rounds: { type: "string", default: env.BENCH_ROUNDS ?? defaults.rounds },
    concurrency: { type: "string", default: env.BENCH_CONCURRENCY ?? defaults.concurrency },
    "profile-server": { type: "string" },
  } as const;
}

/** {@link LoopSettings} from the values of {@link loopOptions}; throws on a value out of range. */
export function readLoopSettings(values: {
  "duration-s": string;
  "warmup-s": string;
  rounds: string;
  concurrency: string;
  "profile-server"?: string | undefined;
}): LoopSettings {
  return {
    durationMs: numberValue("duration-s", values["duration-s"], MIN_DURATION_S) * MS_PER_S,
    warmupMs: numberValue("warmup-s", values["warmup-s"], 0) * MS_PER_S,
    rounds: numberValue("rounds", values.rounds, 1, true),
    concurrencies: values.concurrency.split(",").map((c) => numberValue("concurrency", c, 1, true)),
    profileDir: values["profile-server"] && resolve(values["profile-server"]),
  };
}
