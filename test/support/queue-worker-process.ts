/**
 * A worker process for the queue's cross-process tests and bench: works the probe job until SIGTERM,
 * then stops the queue gracefully and exits 0.
 *
 *   node --import tsx test/support/queue-worker-process.ts <databaseUrl> [--schema s] [--poll seconds]
 *     [--workers n] [--batch n] [--grace-ms n]
 *
 * Prints `ready` on stdout once its workers run; logs go to stderr as JSON lines.
 */
import { parseArgs } from "node:util";
import { createQueue } from "../../server/jobs/queue.js";
import { createSql } from "../../server/store/db.js";
import { createProbeJob, createProbeTables } from "./probe-job.js";

/** Pool size: a few workers plus pg-boss maintenance. */
const POOL_MAX = 10;
/** What the SIGTERM test needs: in-flight probe jobs finish in well under this. */
const DEFAULT_GRACE_MS = 5_000;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    schema: { type: "string", default: "pgboss" },
    poll: { type: "string", default: "2" },
    workers: { type: "string", default: "1" },
    batch: { type: "string", default: "1" },
    "grace-ms": { type: "string", default: String(DEFAULT_GRACE_MS) },
  },
});
const url = positionals[0];
if (!url) throw new Error("usage: queue-worker-process.ts <databaseUrl> [options]");

const sql = createSql(url, { max: POOL_MAX, statementTimeoutMs: 0, applicationName: "queue-worker-process" });
await createProbeTables(sql);
const queue = createQueue({
  sql,
  schema: values.schema,
  jobs: [createProbeJob(sql, { workers: Number(values.workers), batchSize: Number(values.batch) })],
  runWorkers: true,
  pollIntervalSeconds: Number(values.poll),
  log: (level, msg, fields) => process.stderr.write(`${JSON.stringify({ level, msg, ...fields })}\n`),
});
await queue.start();

process.once("SIGTERM", async () => {
  await queue.stop({ graceMs: Number(values["grace-ms"]) });
  await sql.end();
  process.exit(0);
});
process.stdout.write("ready\n");
