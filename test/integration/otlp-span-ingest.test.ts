/**
 * OTLP spans through the in-process ingest on a real database: a parent and its child sent at the
 * same time through two pools (two processes' worth of connections) are always linked, spans that
 * name a project by id are placed once it is checked (refused alone when the workspace has none),
 * and a root placed that way counts once in usage. The orphan sweep, on a real queue, stores the
 * spans whose parent never came as a trace of their own.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SpanSchema } from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import {
  createOtelOrphanSweepJob,
  ORPHAN_WAIT_SECONDS,
  scheduleOtelOrphanSweep,
} from "../../server/jobs/otel-orphan-sweep-job.js";
import { createQueue, type Queue } from "../../server/jobs/queue.js";
import { createLogger } from "../../server/logger.js";
import { countingIngest, createAppMetrics } from "../../server/services/system/app-metrics.js";
import { createSql, type Sql } from "../../server/store/db.js";
import { JsonTexts } from "../../server/store/json-text.js";
import {
  createIngestService,
  type IngestActor,
  type IngestService,
} from "../../server/tracing/ingest-service.js";
import { draftOfSpan, type SpanDraft, spanOrigin } from "../../server/tracing/otlp/span-draft.js";
import type { SpanReading } from "../../server/tracing/otlp/span-screen.js";
import { otlpSpanScreen } from "../../server/transport/otlp/otlp-span-screen.js";
import { useTestDatabase } from "../support/database.js";
import { createTestWorkspace } from "../support/tenancy.js";

const db = useTestDatabase();
let actor: IngestActor;
/** A second pool on the same database, as another server process would have. */
let other: Sql;

beforeAll(async () => {
  actor = { workspaceId: await createTestWorkspace(db().sql), userId: null, apiKeyId: null };
  other = createSql(db().url, { max: 3, statementTimeoutMs: 0, applicationName: "agentplane-test-other" });
});
afterAll(async () => {
  await other?.end();
});

interface SpanSpec {
  traceId: Buffer;
  spanId: Buffer;
  parentId?: Buffer;
  name: string;
  attributes?: Record<string, string>;
}

/** The batch of `specs` as the OTLP service makes it, in `project`. */
function spanBatch(project: string, specs: SpanSpec[]): { drafts: SpanDraft[]; texts: JsonTexts } {
  const reading: SpanReading = { screen: otlpSpanScreen, texts: new JsonTexts(), defaultProject: project };
  const origin = spanOrigin(undefined, undefined, reading);
  const start = BigInt(Date.now()) * 1_000_000n;
  const drafts = specs.map((spec, i) => {
    const span = create(SpanSchema, {
      traceId: spec.traceId,
      spanId: spec.spanId,
      ...(spec.parentId ? { parentSpanId: spec.parentId } : {}),
      name: spec.name,
      startTimeUnixNano: start + BigInt(i) * 1000n,
      endTimeUnixNano: start + 5_000_000n,
      attributes: Object.entries(spec.attributes ?? {}).map(([key, value]) => ({
        key,
        value: { value: { case: "stringValue" as const, value } },
      })),
    });
    const draft = draftOfSpan(span, origin, reading);
    if ("rejected" in draft) throw new Error(draft.rejected);
    return draft;
  });
  return { drafts, texts: reading.texts };
}

function runIdOf(spanId: Buffer): string {
  const hex = spanId.toString("hex");
  return `00000000-0000-0000-${hex.slice(0, 4)}-${hex.slice(4)}`;
}

describe("ingestSpans", () => {
  it("links a child and its parent sent at the same time through two processes' pools, every time", async () => {
    const ours = createIngestService({ sql: db().sql, usageReporting: false });
    const theirs = createIngestService({ sql: other, usageReporting: false });
    const project = `race-${randomUUID()}`;
    const traces = Array.from({ length: 12 }, () => ({
      traceId: randomBytes(16),
      root: randomBytes(8),
      child: randomBytes(8),
    }));
    await Promise.all(
      traces.flatMap(({ traceId, root, child }, i) => {
        const [first, second]: [IngestService, IngestService] = i % 2 === 0 ? [ours, theirs] : [theirs, ours];
        return [
          first.ingestSpans(actor, spanBatch(project, [{ traceId, spanId: root, name: "root" }])),
          second.ingestSpans(
            actor,
            spanBatch(project, [{ traceId, spanId: child, parentId: root, name: "child" }]),
          ),
        ];
      }),
    );
    for (const { root, child } of traces) {
      const [run] = await db().sql<{ parent_run_id: string | null; trace_id: string }[]>`
        select parent_run_id, trace_id from runs where id = ${runIdOf(child)}`;
      expect(run).toEqual({ parent_run_id: runIdOf(root), trace_id: runIdOf(root) });
    }
    expect(
      await db().sql`select 1 from otel_pending_spans where workspace_id = ${actor.workspaceId}`,
    ).toEqual([]);
  });

  it("places spans that name a project by id once it is checked, and refuses those the workspace lacks", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: true });
    const project = `by-id-${randomUUID()}`;
    const seed = { traceId: randomBytes(16), spanId: randomBytes(8), name: "seed" };
    await ingest.ingestSpans(actor, spanBatch(project, [seed]));
    const [{ id: projectId } = { id: "" }] = await db().sql<{ id: string }[]>`
      select id from tracing_projects where name = ${project}`;
    const traceId = randomBytes(16);
    const [root, child, lost] = [randomBytes(8), randomBytes(8), randomBytes(8)];
    const result = await ingest.ingestSpans(
      actor,
      spanBatch("elsewhere", [
        { traceId, spanId: child, parentId: root, name: "child" },
        { traceId, spanId: root, name: "root", attributes: { "langsmith.trace.session_id": projectId } },
        {
          traceId: randomBytes(16),
          spanId: lost,
          name: "lost",
          attributes: { "langsmith.trace.session_id": randomUUID() },
        },
      ]),
    );
    expect(result.runs).toBe(2);
    expect(result.rejected).toEqual([
      { runId: runIdOf(lost), reason: expect.stringMatching(/not found in this workspace/) },
    ]);
    const runs = await db().sql<{ name: string; session_id: string; parent_run_id: string | null }[]>`
      select name, session_id, parent_run_id from runs where trace_id = ${runIdOf(root)} order by name`;
    expect(runs.map((r) => [r.name, r.parent_run_id])).toEqual([
      ["child", runIdOf(root)],
      ["root", null],
    ]);
    expect(runs.find((r) => r.name === "root")?.session_id).toBe(projectId);
    // The root placed after the check is a trace of its project in usage, once however often sent.
    await ingest.ingestSpans(
      actor,
      spanBatch("elsewhere", [
        { traceId, spanId: root, name: "root", attributes: { "langsmith.trace.session_id": projectId } },
      ]),
    );
    const [usage] = await db().sql<{ n: number }[]>`
      select coalesce(sum(traces), 0)::int as n from usage_rollups
      where dimension = 'project' and granularity = 'day' and dimension_id = ${projectId}`;
    expect(usage?.n).toBe(2);
  });
});

function uuidOfBytes(bytes: Buffer): string {
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

describe("the orphan sweep", () => {
  const queues: Queue[] = [];
  afterEach(async () => {
    for (const queue of queues.splice(0)) await queue.stop({ graceMs: 1_000 });
  });

  it("stores spans whose parent never came as a trace of their own, once their wait is over", async () => {
    const sql = db().sql;
    const metrics = createAppMetrics({
      sql,
      queueSchema: () => "otel_orphan_sweep_test",
      pool: { applicationName: "agentplane-test-orphans", max: 1 },
      streamSubscribers: () => 0,
      workerLoops: () => [],
    });
    const ingest = countingIngest(createIngestService({ sql, usageReporting: true }), metrics);
    const project = `orphans-${randomUUID()}`;
    const sender: IngestActor = { ...actor, apiKeyId: randomUUID() };
    // An orphan (its parent is never sent) with a waiting child of its own.
    const lostTrace = randomBytes(16);
    const [missing, orphan, grandchild] = [randomBytes(8), randomBytes(8), randomBytes(8)];
    await ingest.ingestSpans(
      sender,
      spanBatch(project, [
        { traceId: lostTrace, spanId: grandchild, parentId: orphan, name: "grandchild" },
        { traceId: lostTrace, spanId: orphan, parentId: missing, name: "orphan" },
      ]),
    );
    // A span whose parent came another way (a LangSmith run with the id its span maps to).
    const otherTrace = randomBytes(16);
    const [parent, child] = [randomBytes(8), randomBytes(8)];
    await ingest.ingestSpans(
      sender,
      spanBatch(project, [{ traceId: otherTrace, spanId: child, parentId: parent, name: "child" }]),
    );
    await ingest.ingestRuns(actor, {
      post: [{ id: runIdOf(parent), name: "stored", run_type: "chain", session_name: project }],
    });
    // An orphan holding a token count beyond what a run row stores: dropped, not retried for ever.
    const poisonTrace = randomBytes(16);
    const poisoned = randomBytes(8);
    await ingest.ingestSpans(
      sender,
      spanBatch(project, [
        { traceId: poisonTrace, spanId: poisoned, parentId: randomBytes(8), name: "poisoned" },
      ]),
    );
    await sql`
      update otel_pending_spans
      set run = jsonb_set(run, '{outputs}', '{"usage_metadata": {"input_tokens": 1e30}}')
      where run_id = ${runIdOf(poisoned)}`;
    // A span still within its wait.
    const youngTrace = randomBytes(16);
    await ingest.ingestSpans(
      sender,
      spanBatch(project, [
        { traceId: youngTrace, spanId: randomBytes(8), parentId: randomBytes(8), name: "young" },
      ]),
    );
    const over = [uuidOfBytes(lostTrace), uuidOfBytes(otherTrace), uuidOfBytes(poisonTrace)];
    await sql`
      update otel_pending_spans set received_at = now() - make_interval(secs => ${ORPHAN_WAIT_SECONDS + 60})
      where otel_trace_id = any(${over}::uuid[])`;

    const errors: unknown[] = [];
    const warnings: string[] = [];
    const holder: { queue?: Queue } = {};
    const job = createOtelOrphanSweepJob({
      sql,
      ingest,
      log: createLogger("warn", (line) => (line.includes('"level":"warn"') ? warnings : errors).push(line)),
      queue: () => holder.queue as Queue,
    });
    const queue = createQueue({
      sql,
      schema: "otel_orphan_sweep_test",
      jobs: [job],
      runWorkers: true,
      log: (level, msg, fields) => {
        if (level === "error" || level === "warn") errors.push({ msg, ...fields });
      },
    });
    holder.queue = queue;
    queues.push(queue);
    await queue.start();
    const before = await metricValues(metrics);
    expect(before.waiting).toBe(5);
    expect(before.oldest).toBeGreaterThan(ORPHAN_WAIT_SECONDS);
    await scheduleOtelOrphanSweep(queue, job, 0);
    const waiting = () => sql<{ otel_trace_id: string }[]>`
      select otel_trace_id from otel_pending_spans where workspace_id = ${actor.workspaceId}
        and otel_trace_id = any(${[...over, uuidOfBytes(youngTrace)]}::uuid[])`;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && (await waiting()).length > 1)
      await new Promise((r) => setTimeout(r, 100));
    expect((await waiting()).map((w) => w.otel_trace_id)).toEqual([uuidOfBytes(youngTrace)]);

    const runs = await sql<
      {
        id: string;
        parent_run_id: string | null;
        trace_id: string;
        is_root: boolean;
        api_key_id: string | null;
        extra: { otel: Record<string, unknown> };
      }[]
    >`select id, parent_run_id, trace_id, is_root, api_key_id, extra from runs
      where id = any(${[runIdOf(orphan), runIdOf(grandchild), runIdOf(child)]}::uuid[])`;
    const byId = new Map(runs.map((r) => [r.id, r]));
    expect(byId.get(runIdOf(orphan))).toMatchObject({
      parent_run_id: null,
      trace_id: runIdOf(orphan),
      is_root: true,
      api_key_id: sender.apiKeyId,
    });
    expect(byId.get(runIdOf(orphan))?.extra.otel).toMatchObject({
      missing_parent_run_id: runIdOf(missing),
      parent_span_id: missing.toString("hex"),
    });
    expect(byId.get(runIdOf(grandchild))).toMatchObject({
      parent_run_id: runIdOf(orphan),
      trace_id: runIdOf(orphan),
    });
    expect(byId.get(runIdOf(child))).toMatchObject({
      parent_run_id: runIdOf(parent),
      trace_id: runIdOf(parent),
    });
    // The orphan's trace counts in usage, for its sender's key, as any trace does.
    const [usage] = await sql<{ n: number }[]>`
      select coalesce(sum(traces), 0)::int as n from usage_rollups
      where dimension = 'api_key' and granularity = 'day' and dimension_id = ${sender.apiKeyId}`;
    expect(usage?.n).toBe(1);
    const next = await sql<{ start_after: Date }[]>`
      select start_after from otel_orphan_sweep_test.job
      where name = 'otel.orphan-sweep' and state = 'created'`;
    expect(next).toHaveLength(1);
    expect(errors).toEqual([]);
    // The poisoned trace is gone, stored as nothing, and said so.
    const [poison] = await sql<{ n: number }[]>`
      select count(*)::int as n from runs where id = ${runIdOf(poisoned)}`;
    expect(poison?.n).toBe(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(uuidOfBytes(poisonTrace));
    expect(warnings[0]).toContain("out of the range");
    // Observable: three runs stored by the sweep, one span left waiting, not long.
    const after = await metricValues(metrics);
    expect(after).toMatchObject({ stored: 3, refused: 0, waiting: 1 });
    expect(after.oldest).toBeLessThan(ORPHAN_WAIT_SECONDS);
  });
});

/** The orphan sweep's metrics as a scrape reads them (JSON format). */
async function metricValues(metrics: ReturnType<typeof createAppMetrics>) {
  const all = JSON.parse((await metrics.render("json")).body) as {
    name: string;
    values: { value: number; labels: Record<string, string> }[];
  }[];
  const of = (name: string, labels: Record<string, string> = {}) =>
    all
      .find((m) => m.name === name)
      ?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
  expect(of("agentplane_metrics_database_up")).toBe(1);
  return {
    stored: of("agentplane_otel_orphaned_spans_total", { outcome: "stored" }),
    refused: of("agentplane_otel_orphaned_spans_total", { outcome: "refused" }),
    waiting: of("agentplane_otel_waiting_spans"),
    oldest: of("agentplane_otel_waiting_oldest_seconds") ?? 0,
  };
}
