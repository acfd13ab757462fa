import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { RunService } from "../../../gen/agentplane/tracing/v1/run_service_pb.js";
import { TraceService } from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { runIdOfSpan } from "../../../server/tracing/otlp/span-draft.js";
import { ANSWERED, DENIED, isolationSuite } from "./isolation-suite.js";

const traces = (c: AgentplaneClient) => createClient(TraceService, c.transport);
const runs = (c: AgentplaneClient) => createClient(RunService, c.transport);

/** Text only A's span holds. */
const SECRET = "secret-of-A-otlp-span";

/** An OTLP/HTTP JSON export of one root span. */
function jsonExport(traceId: Buffer, spanId: Buffer, name: string) {
  const now = BigInt(Date.now()) * 1_000_000n;
  return {
    resourceSpans: [
      {
        scopeSpans: [
          {
            spans: [
              {
                traceId: traceId.toString("hex"),
                spanId: spanId.toString("hex"),
                name,
                kind: 1,
                startTimeUnixNano: `${now}`,
                endTimeUnixNano: `${now + 1_000_000n}`,
              },
            ],
          },
        ],
      },
    ],
  };
}

/** The same export through Connect (the gRPC form's message). */
function grpcExport(c: AgentplaneClient, traceId: Buffer, spanId: Buffer, name: string) {
  const now = BigInt(Date.now()) * 1_000_000n;
  return traces(c).export({
    resourceSpans: [
      {
        scopeSpans: [
          {
            spans: [
              { traceId, spanId, name, kind: 1, startTimeUnixNano: now, endTimeUnixNano: now + 1_000_000n },
            ],
          },
        ],
      },
    ],
  });
}

/**
 * OTLP trace export: run ids come from span ids alone, so B sending spans with the ids of A's spans
 * must make runs of B's own and leave A's untouched; B cannot export into A by naming A's tenant.
 */
export const suite = isolationSuite({
  service: "otlp traces",
  async setup({ t, workspaceA }) {
    const traceId = randomBytes(16);
    const spanId = randomBytes(8);
    const res = await t.fetch("/otel/v1/traces", {
      method: "POST",
      tenantId: workspaceA,
      body: JSON.stringify(jsonExport(traceId, spanId, SECRET)),
    });
    expect(res.status).toBe(200);
    return { traceId, spanId, runId: runIdOfSpan(spanId), workspaceA };
  },
  secrets: () => [SECRET],
  cases: [
    {
      ...ANSWERED,
      name: "TraceService.Export with the ids of A's span",
      rest: (f) => ({
        method: "POST",
        path: "/otel/v1/traces",
        body: jsonExport(f.traceId, f.spanId, "B's span"),
      }),
      connect: (c, f) => grpcExport(c, f.traceId, f.spanId, "B's span"),
      expectA: false,
    },
    {
      ...DENIED,
      name: "TraceService.Export with x-tenant-id of A",
      rest: (f) => ({
        method: "POST",
        path: "/otel/v1/traces",
        body: jsonExport(f.traceId, randomBytes(8), "B in A"),
        tenantId: f.workspaceA,
      }),
      connect: (c, f) => grpcExport(c, f.traceId, randomBytes(8), "B in A"),
    },
  ],
  async verify({ adminA, adminB }, f) {
    expect((await runs(adminA).readRun({ runId: f.runId })).name).toBe(SECRET);
    expect((await runs(adminB).readRun({ runId: f.runId })).name).toBe("B's span");
    const { runs: inA } = await runs(adminA).queryRuns({ trace: f.runId, limit: 10 });
    expect(inA.map((r) => r.name)).toEqual([SECRET]);
  },
});
