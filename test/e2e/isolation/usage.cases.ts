import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import postgres from "postgres";
import { expect } from "vitest";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { uuidv7 } from "../../../server/ids.js";
import { unconfined } from "../../../server/store/tracing/workspace-scope.js";
import { recordTraceUsage } from "../../../server/tracing/usage-recorder.js";
import { ANSWERED, isolationSuite } from "./isolation-suite.js";

const USAGE = "/api/v1/orgs/current/billing/granular-usage";
const START = "2026-03-01T00:00:00Z";
const END = "2026-03-08T00:00:00Z";
/** Traces counted in each workspace: different, so a sum that includes A shows. */
const TRACES_A = 3;
const TRACES_B = 1;

/** A GetGranularUsage request both ways; Connect's answer in REST's `{usage}` shape (camelCase). */
const usage = (workspaceIds: (f: Fixture) => string[], groupBy = "workspace") => ({
  rest: (f: Fixture) => ({
    method: "GET",
    path: `${USAGE}?${new URLSearchParams([
      ["start_time", START],
      ["end_time", END],
      ["group_by", groupBy],
      ...workspaceIds(f).map((id) => ["workspace_ids", id]),
    ])}`,
  }),
  connect: (c: AgentplaneClient, f: Fixture) =>
    c.tracing.usage
      .getGranularUsage({
        startTime: timestampFromDate(new Date(START)),
        endTime: timestampFromDate(new Date(END)),
        workspaceIds: workspaceIds(f),
        groupBy,
      })
      .then((r) => ({ usage: r.usage })),
});

/** The traces of every row of a usage answer. */
const traces = (answer: unknown) => (answer as { usage: { traces: number }[] }).usage.map((r) => r.traces);

interface Fixture {
  workspaceA: string;
  workspaceB: string;
  keyB: string;
  projectsA: string[];
}

/**
 * Granular usage never answers an error for another workspace: workspaces the caller cannot read
 * are silently left out (as the reference API does). So a key confined to B that asks for A's
 * usage by id (alone, or with B) is answered with B's usage only, by workspace and by project,
 * while A's admin asking the same sees A's. `verify` checks the CSV export the same way.
 */
export const suite = isolationSuite({
  service: "usage",
  async setup({ t, adminA, workspaceA, workspaceB }): Promise<Fixture> {
    const keyB = (
      await adminA.iam.apiKeys.createApiKey({
        kind: "service",
        workspaceIds: [workspaceB],
        role: "admin",
        organizationRole: "operator",
      })
    ).key;
    const projectsA: string[] = [];
    const sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      for (const [workspaceId, count] of [
        [workspaceA, TRACES_A],
        [workspaceB, TRACES_B],
      ] as const) {
        for (let i = 0; i < count; i++) {
          const projectId = uuidv7();
          if (workspaceId === workspaceA) projectsA.push(projectId);
          await recordTraceUsage(unconfined(sql), {
            workspaceId,
            projectId,
            userId: null,
            apiKeyId: null,
            receivedAt: new Date("2026-03-02T12:00:00Z"),
          });
        }
      }
    } finally {
      await sql.end();
    }
    return { keyB, workspaceA, workspaceB, projectsA };
  },
  secrets: (f) => [f.workspaceA, ...f.projectsA],
  cases: [
    {
      ...ANSWERED,
      name: "UsageService.GetGranularUsage of A's workspace",
      ...usage((f) => [f.workspaceA]),
      expectB: (answer) => expect(traces(answer)).toEqual([]),
      expectA: (answer) => expect(traces(answer)).toEqual([TRACES_A]),
    },
    {
      ...ANSWERED,
      name: "UsageService.GetGranularUsage of A's and B's workspaces",
      ...usage((f) => [f.workspaceA, f.workspaceB]),
      expectB: (answer) => expect(traces(answer)).toEqual([TRACES_B]),
      expectA: (answer) => expect(traces(answer).sort()).toEqual([TRACES_B, TRACES_A]),
    },
    {
      ...ANSWERED,
      name: "UsageService.GetGranularUsage of A's workspace by project",
      ...usage((f) => [f.workspaceA, f.workspaceB], "project"),
      expectB: (answer) => expect(traces(answer)).toEqual([TRACES_B]),
    },
    {
      ...ANSWERED,
      name: "UsageService.GetGranularUsage of A's workspace by API key",
      ...usage((f) => [f.workspaceA], "api_key"),
      expectB: (answer) => expect(traces(answer)).toEqual([]),
      expectA: (answer) => expect(traces(answer)).toEqual([TRACES_A]),
    },
  ],
  async verify({ t }, f) {
    for (const ids of [[f.workspaceA], [f.workspaceA, f.workspaceB]]) {
      const query = new URLSearchParams([
        ["start_time", START],
        ["end_time", END],
        ...ids.map((id) => ["workspace_ids", id]),
      ]);
      const res = await t.fetch(`${USAGE}/export?${query}`, { apiKey: f.keyB });
      expect(res.status).toBe(200);
      const csv = await res.text();
      expect(csv).not.toContain(f.workspaceA);
      expect(csv.trim().split("\r\n")).toHaveLength(ids.includes(f.workspaceB) ? 2 : 1);
    }
  },
});
