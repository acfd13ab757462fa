/**
 * OTLP spans through the in-process ingest on a real database: a parent and its child sent at the
 * same time through two pools (two processes' worth of connections) are always linked, spans that
 * name a project by id are placed once it is checked (refused alone when the workspace has none),
 * and a root placed that way counts once in usage.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SpanSchema } from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
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
