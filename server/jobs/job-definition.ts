/**
 * How pg-boss treats several jobs of one queue (v10 policies):
 * - `standard`: every job runs, no deduplication (a `singletonKey` does not deduplicate here).
 * - `short`: at most one *queued* job per singleton key; a second send with the key is refused.
 * - `singleton`: at most one *active* job per key, enforced by a unique index, so a second worker
 *   fetching the same key fails its fetch instead of waiting.
 * - `stately`: at most one queued and one active job per key.
 */
export type JobPolicy = "standard" | "short" | "singleton" | "stately";

/** What a handler learns about the job it runs, besides the payload. */
export interface JobContext {
  /** The pg-boss job id (a UUID); stable across retries, so handlers can key idempotent writes on it. */
  id: string;
  /** 0 on the first attempt, 1 on the first retry, and so on. */
  retryCount: number;
  /**
   * Fires when the job must stop: the queue's `stop()` gave up waiting for it, or the job ran past
   * `expireInSeconds` (pg-boss has then failed it already, so any further writes are wasted).
   */
  signal: AbortSignal;
}

/** What {@link defineJob} takes. */
export interface JobDefinitionInput<P extends object> {
  /** The queue name: letters, digits, `_`, `-` and `.`; unique among registered jobs. */
  name: string;
  /**
   * Version of the payload schema, a positive integer. It is stamped into the stored payload as `$v`,
   * and a worker refuses (throws on) a payload of another version, so a job sent by a newer release is
   * retried until a worker that knows that version picks it up.
   */
  version: number;
  /** Queue policy; default `standard`. Fixed when the queue is first created. */
  policy?: JobPolicy;
  /** Retries after the first attempt (0 = run once). */
  retryLimit: number;
  /** Seconds before a retry; with `retryBackoff` the base of an exponential, jittered delay. */
  retryDelaySeconds: number;
  /** Double the retry delay on every attempt (with jitter). */
  retryBackoff: boolean;
  /**
   * Seconds an attempt may run. Past it pg-boss fails the attempt (and retries it while retries
   * remain), and a worker that died mid-job has its job retried after this long. Below 24 h.
   */
  expireInSeconds: number;
  /** Seconds a job may wait unstarted before pg-boss archives it unrun; default pg-boss's 14 days. */
  retentionSeconds?: number;
  /** Jobs fetched together by one worker; they run concurrently. Default 1. */
  batchSize?: number;
  /** Concurrent fetch loops per process for this job. Default 1. */
  workers?: number;
  /**
   * Does the work. Must be idempotent (an attempt can be repeated after a crash) and must throw on
   * failure so that pg-boss retries; never catch-and-log.
   */
  handler(payload: P, job: JobContext): Promise<void>;
}

/** A registered kind of job: its queue, its retry policy and its handler. Build with {@link defineJob}. */
export interface JobDefinition<P extends object = object> {
  readonly name: string;
  readonly version: number;
  readonly policy: JobPolicy;
  readonly retryLimit: number;
  readonly retryDelaySeconds: number;
  readonly retryBackoff: boolean;
  readonly expireInSeconds: number;
  readonly retentionSeconds: number | undefined;
  readonly batchSize: number;
  readonly workers: number;
  /** See {@link JobDefinitionInput.handler}. Method syntax so a `JobDefinition<X>` fits `JobDefinition[]`. */
  handler(payload: P, job: JobContext): Promise<void>;
}

/** pg-boss refuses expirations of 24 hours or more. */
const MAX_EXPIRE_SECONDS = 24 * 60 * 60 - 1;
/** Queue names become part of NOTIFY payloads and log lines; keep them plain. */
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
/** pg-boss reserves queue names with this prefix for itself. */
const RESERVED_PREFIX = "__pgboss";

function requireInteger(
  name: string,
  field: string,
  value: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
) {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`job ${name}: ${field} must be an integer from ${min} to ${max}, got ${value}`);
  }
}

/**
 * Declares a job. Checks the options at once (a bad definition is a programming error and fails at
 * import time, not when the first job is sent) and fills in the defaults.
 */
export function defineJob<P extends object>(input: JobDefinitionInput<P>): JobDefinition<P> {
  const { name } = input;
  if (!NAME_PATTERN.test(name) || name.startsWith(RESERVED_PREFIX)) {
    throw new Error(
      `job name ${JSON.stringify(name)} must be letters, digits, "_", "-" or "." and not start with __pgboss`,
    );
  }
  const definition: JobDefinition<P> = {
    name,
    version: input.version,
    policy: input.policy ?? "standard",
    retryLimit: input.retryLimit,
    retryDelaySeconds: input.retryDelaySeconds,
    retryBackoff: input.retryBackoff,
    expireInSeconds: input.expireInSeconds,
    retentionSeconds: input.retentionSeconds,
    batchSize: input.batchSize ?? 1,
    workers: input.workers ?? 1,
    handler: input.handler,
  };
  requireInteger(name, "version", definition.version, 1);
  requireInteger(name, "retryLimit", definition.retryLimit, 0);
  requireInteger(name, "retryDelaySeconds", definition.retryDelaySeconds, 0);
  requireInteger(name, "expireInSeconds", definition.expireInSeconds, 1, MAX_EXPIRE_SECONDS);
  if (definition.retentionSeconds !== undefined)
    requireInteger(name, "retentionSeconds", definition.retentionSeconds, 1);
  requireInteger(name, "batchSize", definition.batchSize, 1);
  requireInteger(name, "workers", definition.workers, 1);
  return Object.freeze(definition);
}
