import { beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "../../test/support/database.js";
import { uuidv7 } from "../ids.js";
import { insertOrganization } from "../store/iam/organization-store.js";
import { insertWorkspace } from "../store/iam/workspace-store.js";
import { inWorkspaceScope } from "../store/tracing/workspace-scope.js";
import { NO_DIMENSION_ID, recordTracesUsage, recordTraceUsage } from "./usage-recorder.js";

const db = useTestDatabase();

interface RollupRow {
  dimension: string;
  granularity: string;
  bucket_start: Date;
  dimension_id: string;
  traces: string;
}

describe("recordTraceUsage", () => {
  const workspaceId = uuidv7();
  const projectId = uuidv7();
  const userId = uuidv7();
  const apiKeyId = uuidv7();

  beforeAll(async () => {
    const orgId = uuidv7();
    await insertOrganization(db().sql, { id: orgId, displayName: "Org", plan: "plus" });
    await insertWorkspace(db().sql, {
      id: workspaceId,
      organizationId: orgId,
      displayName: "WS",
      tenantHandle: "ws",
      isPersonal: false,
    });
  });

  async function rows(): Promise<RollupRow[]> {
    return db().sql<RollupRow[]>`
      select dimension, granularity, bucket_start, dimension_id, traces::text from usage_rollups
      where workspace_id = ${workspaceId} order by granularity, bucket_start, dimension, dimension_id`;
  }

  it("adds one to the hourly and daily row of every dimension, in the UTC hour and day received", async () => {
    const trace = {
      workspaceId,
      projectId,
      userId,
      apiKeyId,
      receivedAt: new Date("2026-03-01T23:59:59.999Z"),
    };
    await inWorkspaceScope(db().sql, [workspaceId], async (scoped) => {
      await recordTraceUsage(scoped, trace);
      await recordTraceUsage(scoped, trace);
    });
    await inWorkspaceScope(db().sql, [workspaceId], (q) =>
      recordTraceUsage(q, { ...trace, receivedAt: new Date("2026-03-02T00:00:00Z") }),
    );

    const all = await rows();
    const expected = (granularity: string, bucket: string, traces: string) =>
      [
        ["api_key", apiKeyId],
        ["project", projectId],
        ["user", userId],
        ["workspace", workspaceId],
      ].map(([dimension, id]) => ({
        dimension,
        granularity,
        bucket_start: new Date(bucket),
        dimension_id: id,
        traces,
      }));
    expect(all).toEqual([
      ...expected("day", "2026-03-01T00:00:00Z", "2"),
      ...expected("day", "2026-03-02T00:00:00Z", "1"),
      ...expected("hour", "2026-03-01T23:00:00Z", "2"),
      ...expected("hour", "2026-03-02T00:00:00Z", "1"),
    ]);
  });

  it("counts a trace without user or key under the nil UUID", async () => {
    await db().sql`delete from usage_rollups`;
    await inWorkspaceScope(db().sql, [workspaceId], (q) =>
      recordTraceUsage(q, {
        workspaceId,
        projectId,
        userId: null,
        apiKeyId: null,
        receivedAt: new Date("2026-04-10T12:30:00Z"),
      }),
    );
    const all = await rows();
    expect(all.filter((r) => r.dimension === "user" || r.dimension === "api_key")).toHaveLength(4);
    expect(
      all.filter((r) => r.dimension === "user" || r.dimension === "api_key").map((r) => r.dimension_id),
    ).toEqual([NO_DIMENSION_ID, NO_DIMENSION_ID, NO_DIMENSION_ID, NO_DIMENSION_ID]);
  });

  it("rolls back with the transaction that failed to insert the trace", async () => {
    await db().sql`delete from usage_rollups`;
    const failed = inWorkspaceScope(db().sql, [workspaceId], async (q) => {
      await recordTraceUsage(q, { workspaceId, projectId, userId, apiKeyId, receivedAt: new Date() });
      throw new Error("ingest failed");
    });
    await expect(failed).rejects.toThrow("ingest failed");
    expect(await rows()).toEqual([]);
  });

  it("counts a batch of traces in one statement, per hour, day and dimension value", async () => {
    await db().sql`delete from usage_rollups`;
    const otherProject = uuidv7();
    const at = (iso: string) => new Date(iso);
    const base = { workspaceId, userId, apiKeyId };
    await inWorkspaceScope(db().sql, [workspaceId], (q) =>
      recordTracesUsage(q, [
        { ...base, projectId, receivedAt: at("2026-05-01T10:10:00Z") },
        { ...base, projectId, receivedAt: at("2026-05-01T10:20:00Z") },
        { ...base, projectId: otherProject, receivedAt: at("2026-05-01T11:05:00Z") },
      ]),
    );
    const all = await rows();
    const count = (dimension: string, granularity: string, id: string, bucket: string) =>
      all.find(
        (r) =>
          r.dimension === dimension &&
          r.granularity === granularity &&
          r.dimension_id === id &&
          r.bucket_start.getTime() === Date.parse(bucket),
      )?.traces;
    expect(count("workspace", "day", workspaceId, "2026-05-01T00:00:00Z")).toBe("3");
    expect(count("workspace", "hour", workspaceId, "2026-05-01T10:00:00Z")).toBe("2");
    expect(count("workspace", "hour", workspaceId, "2026-05-01T11:00:00Z")).toBe("1");
    expect(count("project", "day", projectId, "2026-05-01T00:00:00Z")).toBe("2");
    expect(count("project", "day", otherProject, "2026-05-01T00:00:00Z")).toBe("1");
    expect(count("api_key", "day", apiKeyId, "2026-05-01T00:00:00Z")).toBe("3");
    // By day: 4 dimensions, two projects (5 rows); by hour: 4 rows in each of the two hours.
    expect(all).toHaveLength(5 + 8);
  });

  it("locks no rollup row before the commit: a concurrent batch of the same rows commits meanwhile", async () => {
    await db().sql`delete from usage_rollups`;
    const trace = { workspaceId, projectId, userId, apiKeyId, receivedAt: new Date("2026-06-01T08:00:00Z") };
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let recorded = () => {};
    const open = new Promise<void>((resolve) => {
      recorded = resolve;
    });
    const first = inWorkspaceScope(db().sql, [workspaceId], async (q) => {
      await recordTraceUsage(q, trace);
      recorded();
      await held;
    });
    await open;
    // With the first transaction open after counting the same rows, this one commits without
    // waiting for it (the lock timeout turns a wait into a failure rather than a hung test).
    await inWorkspaceScope(db().sql, [workspaceId], async (q) => {
      await q`set local lock_timeout = '5s'`;
      await recordTraceUsage(q, trace);
    });
    expect((await rows()).map((r) => r.traces)).toEqual(Array(8).fill("1"));
    release();
    await first;
    expect((await rows()).map((r) => r.traces)).toEqual(Array(8).fill("2"));
    const [pending] = await db().sql<{ n: number }[]>`select count(*)::int as n from usage_pending`;
    expect(pending?.n).toBe(0);
  });

  it("refuses counts for a workspace outside the scope", async () => {
    const other = uuidv7();
    const refused = inWorkspaceScope(db().sql, [workspaceId], (q) =>
      recordTraceUsage(q, { workspaceId: other, projectId, userId, apiKeyId, receivedAt: new Date() }),
    );
    await expect(refused).rejects.toMatchObject({ code: "42501" });
    const [counted] = await db().sql<{ n: number }[]>`
      select count(*)::int as n from usage_rollups where workspace_id = ${other}`;
    expect(counted?.n).toBe(0);
  });
});
