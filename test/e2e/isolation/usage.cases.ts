import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import postgres from "postgres";
import { expect } from "vitest";
import { UsageService } from "../../../gen/agentplane/tracing/v1/usage_service_pb.js";
import { createClient as createAgentplaneClient } from "../../../sdk/index.js";
import { uuidv7 } from "../../../server/ids.js";
import { recordTraceUsage } from "../../../server/tracing/usage-recorder.js";
import { isolationSuite } from "./isolation-suite.js";

const USAGE = "/api/v1/orgs/current/billing/granular-usage";
const START = "2026-03-01T00:00:00Z";
const END = "2026-03-08T00:00:00Z";

/**
 * Granular usage never answers an error for another workspace: workspaces the caller cannot read
 * are silently left out (as the reference API does). So there are no error cases; `verify` checks
 * that a key confined to B, asking for A's usage by id (alone and together with B), sees none of it
 * through the JSON API, the CSV export and Connect, while A's admin still sees it.
 */
export const suite = isolationSuite({
  service: "usage",
  async setup({ t, adminA, workspaceA, workspaceB }) {
    const keyB = (
      await adminA.apiKeys.createApiKey({
        kind: "service",
        workspaceIds: [workspaceB],
        role: "admin",
        organizationRole: "operator",
      })
    ).key;
    const sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      for (const [workspaceId, count] of [
        [workspaceA, 3],
        [workspaceB, 1],
      ] as const) {
        for (let i = 0; i < count; i++) {
          await recordTraceUsage(sql, {
            workspaceId,
            projectId: uuidv7(),
            userId: null,
            apiKeyId: null,
            receivedAt: new Date("2026-03-02T12:00:00Z"),
          });
        }
      }
    } finally {
      await sql.end();
    }
    return { keyB, workspaceA, workspaceB };
  },
  cases: [],
  async verify({ t }, f) {
    const query = (ids: string[]) =>
      new URLSearchParams([
        ["start_time", START],
        ["end_time", END],
        ...ids.map((id) => ["workspace_ids", id]),
      ]);

    const asA = (await (await t.fetch(`${USAGE}?${query([f.workspaceA])}`)).json()) as {
      usage: { traces: number }[];
    };
    expect(asA.usage.map((r) => r.traces)).toEqual([3]);

    for (const ids of [[f.workspaceA], [f.workspaceA, f.workspaceB]]) {
      const res = await t.fetch(`${USAGE}?${query(ids)}`, { apiKey: f.keyB });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { usage: { dimensions: { workspace_id: string } }[] };
      const onlyB = ids.includes(f.workspaceB) ? [f.workspaceB] : [];
      expect(body.usage.map((r) => r.dimensions.workspace_id)).toEqual(onlyB);

      const csv = await (await t.fetch(`${USAGE}/export?${query(ids)}`, { apiKey: f.keyB })).text();
      expect(csv).not.toContain(f.workspaceA);
      expect(csv.trim().split("\r\n")).toHaveLength(1 + body.usage.length);

      const connect = createClient(
        UsageService,
        createAgentplaneClient({ baseUrl: t.baseUrl, apiKey: f.keyB }).transport,
      );
      const response = await connect.getGranularUsage({
        startTime: timestampFromDate(new Date(START)),
        endTime: timestampFromDate(new Date(END)),
        workspaceIds: ids,
      });
      expect(response.usage.map((r) => r.dimensions?.workspaceId)).toEqual(onlyB);
    }
  },
});
