import { setTimeout as sleep } from "node:timers/promises";
import { defineJob, type JobDefinition } from "../../server/jobs/job-definition.js";
import type { Sql } from "../../server/store/db.js";

/** Payload of the probe job. */
export interface ProbePayload {
  /** Caller's label, e.g. a test case or a sample number. */
  key: string;
  /** Milliseconds the handler works (abortable) before recording its effect. */
  workMs?: number;
  /** Wall-clock time of the send, `performance.timeOrigin + performance.now()`, for latency. */
  sentAtMs?: number;
}

/** Options of {@link createProbeJob} that tests vary. */
export interface ProbeJobOptions {
  batchSize?: number;
  workers?: number;
}

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes on one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Creates the probe's tables: `queue_probe_runs` gets a row per attempt (never deduplicated, so a job
 * that ran twice shows twice) and `queue_probe_effects` a row per job id (the idempotent effect).
 */
export async function createProbeTables(sql: Sql): Promise<void> {
  await sql`create table if not exists queue_probe_runs (
    job_id uuid not null,
    key text not null,
    pid integer not null,
    retry_count integer not null,
    latency_ms double precision
  )`;
  await sql`create table if not exists queue_probe_effects (
    job_id uuid primary key,
    key text not null,
    pid integer not null
  )`;
}

/**
 * A job that records each attempt and then, after `workMs`, its effect keyed on the job id. The
 * queue-worker process and the test (or bench) process each build it, one to work, one to send.
 */
export function createProbeJob(sql: Sql, options: ProbeJobOptions = {}): JobDefinition<ProbePayload> {
  return defineJob<ProbePayload>({
    name: "probe",
    version: 1,
    retryLimit: 2,
    retryDelaySeconds: 1,
    retryBackoff: false,
    // Tests interrupt workers on purpose; a crashed attempt should come back within the test's time.
    expireInSeconds: 30,
    batchSize: options.batchSize ?? 1,
    workers: options.workers ?? 1,
    async handler(payload, job) {
      const latency = payload.sentAtMs === undefined ? null : nowMs() - payload.sentAtMs;
      await sql`insert into queue_probe_runs (job_id, key, pid, retry_count, latency_ms)
        values (${job.id}, ${payload.key}, ${process.pid}, ${job.retryCount}, ${latency})`;
      if (payload.workMs) await sleep(payload.workMs, undefined, { signal: job.signal });
      await sql`insert into queue_probe_effects (job_id, key, pid)
        values (${job.id}, ${payload.key}, ${process.pid}) on conflict (job_id) do nothing`;
    },
  });
}
