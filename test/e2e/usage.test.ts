/**
 * Granular usage end to end: traces counted by the recorder (the hook the ingest calls) and by the
 * real ingest, read back through the JSON API (REST and Connect) and the CSV export of a real server.
 * One file, over 500 lines, because every case reads the one seeded data set (one server start).
 */
import { toJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { parseString } from "fast-csv";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GranularUsageDimensionsSchema,
  UsageService,
} from "../../gen/agentplane/tracing/v1/usage_service_pb.js";
import { ConnectError } from "../../sdk/index.js";
import { uuidv7 } from "../../server/ids.js";
import { createSql } from "../../server/store/db.js";
import { unconfined } from "../../server/store/tracing/workspace-scope.js";
import { createIngestService } from "../../server/tracing/ingest-service.js";
import { recordTraceUsage } from "../../server/tracing/usage-recorder.js";
import { USAGE_CSV_COLUMNS } from "../../server/transport/usage-export-adapter.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

interface UsageRecord {
  time_bucket: string;
  dimensions: Record<string, string | null>;
  traces: number;
}
interface UsageResponse {
  stride: { days: number; hours: number };
  usage: UsageRecord[];
}

const USAGE = "/api/v1/orgs/current/billing/granular-usage";
/** The dimension keys of each group_by (the seed's table). */
const GROUP_KEYS: Record<string, string[]> = {
  workspace: ["workspace_id", "workspace_name"],
  project: ["project_id", "project_name"],
  user: ["user_id", "user_email"],
  api_key: ["api_key_short_key"],
};

let t: TestApp;
let sql: postgres.Sql;
let wsA: string;
let wsB: string;
let adminUser: { id: string; email: string };
let adminKey: { id: string; shortKey: string };
let service: { id: string; shortKey: string; key: string };
const projects = { alpha: uuidv7(), formula: uuidv7(), beta: uuidv7(), gone: uuidv7() };

/** Counts one trace, as the ingest does when it first inserts a root run. */
async function trace(
  at: string,
  opts: { workspace?: string; project?: string; user?: string | null; key?: string | null } = {},
) {
  await sql.begin((tx) =>
    recordTraceUsage(unconfined(tx), {
      workspaceId: opts.workspace ?? wsA,
      projectId: opts.project ?? projects.alpha,
      userId: opts.user === undefined ? adminUser.id : opts.user,
      apiKeyId: opts.key === undefined ? adminKey.id : opts.key,
      receivedAt: new Date(at),
    }),
  );
}

function query(params: Record<string, string | string[]>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    for (const v of Array.isArray(value) ? value : [value]) search.append(name, v);
  return search.toString();
}

async function usage(params: Record<string, string | string[]>, apiKey?: string): Promise<UsageResponse> {
  const res = await t.fetch(`${USAGE}?${query(params)}`, apiKey ? { apiKey } : {});
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as UsageResponse;
}

async function csv(params: Record<string, string | string[]>): Promise<{ res: Response; rows: string[][] }> {
  const res = await t.fetch(`${USAGE}/export?${query(params)}`);
  const text = await res.text();
  const rows: string[][] = [];
  await new Promise<void>((resolve, reject) =>
    parseString<string[], string[]>(text)
      .on("data", (row: string[]) => rows.push(row))
      .on("error", reject)
      .on("end", () => resolve()),
  );
  return { res, rows };
}

beforeAll(async () => {
  t = await startTestApp();
  sql = postgres(t.databaseUrl, { max: 2, onnotice: () => {} });
  const admin = t.client();
  const me = await admin.iam.identity.whoami({});
  wsA = me.workspace?.id ?? "";
  adminUser = { id: me.user?.id ?? "", email: me.user?.email ?? "" };
  adminKey = { id: me.apiKeyId, shortKey: me.apiKeyShortKey };
  wsB = (await admin.iam.workspaces.createWorkspace({ displayName: "Beta" })).id;
  const created = await admin.iam.apiKeys.createApiKey({
    kind: "service",
    workspaceIds: [wsB],
    role: "viewer",
    organizationRole: "viewer",
  });
  service = { id: created.id, shortKey: created.shortKey, key: created.key };
  await sql`
    insert into tracing_projects (id, workspace_id, name) values
      (${projects.alpha}, ${wsA}, 'alpha'), (${projects.formula}, ${wsA}, '=HYPERLINK("x","y"), "quoted"'),
      (${projects.beta}, ${wsB}, 'beta')`;

  // March 2026: the 1st is a Sunday, the 2nd a Monday.
  await trace("2026-03-01T09:59:59Z");
  await trace("2026-03-01T10:00:00Z");
  await trace("2026-03-01T10:15:00Z", { project: projects.formula });
  await trace("2026-03-02T00:00:00Z");
  await trace("2026-03-03T04:59:59Z", { user: null, key: service.id });
  await trace("2026-03-03T05:00:00Z");
  await trace("2026-03-04T12:00:00Z", {
    workspace: wsB,
    project: projects.beta,
    user: null,
    key: service.id,
  });
  await trace("2026-04-20T08:00:00Z");
  await trace("2025-12-31T23:00:00Z");
  await trace("2028-01-10T08:00:00Z", { project: projects.gone, user: null, key: null });
});
afterAll(async () => {
  await sql?.end();
  await t?.stop();
});

describe("GET /api/v1/orgs/current/billing/granular-usage", () => {
  it("counts each trace once in the UTC day it was received, per workspace", async () => {
    const body = await usage({
      start_time: "2026-03-01T00:00:00Z",
      end_time: "2026-03-08T00:00:00Z",
      workspace_ids: [wsA, wsB],
    });
    expect(body.stride).toEqual({ days: 1, hours: 0 });
    const ws = (id: string, name: string) => ({ workspace_id: id, workspace_name: name });
    const nameA = (await t.client().iam.workspaces.getWorkspace({ workspaceId: wsA })).displayName;
    expect(body.usage).toEqual([
      { time_bucket: "2026-03-01T00:00:00Z", dimensions: ws(wsA, nameA), traces: 3 },
      { time_bucket: "2026-03-02T00:00:00Z", dimensions: ws(wsA, nameA), traces: 1 },
      { time_bucket: "2026-03-03T00:00:00Z", dimensions: ws(wsA, nameA), traces: 2 },
      { time_bucket: "2026-03-04T00:00:00Z", dimensions: ws(wsB, "Beta"), traces: 1 },
    ]);
  });

  it("widens a range to whole UTC hours and counts partial days from hourly rollups", async () => {
    const body = await usage({
      start_time: "2026-03-01T10:30:00Z",
      end_time: "2026-03-03T04:30:00Z",
      workspace_ids: wsA,
    });
    expect(body.stride).toEqual({ days: 1, hours: 0 });
    expect(body.usage.map((r) => [r.time_bucket, r.traces])).toEqual([
      ["2026-03-01T00:00:00Z", 2],
      ["2026-03-02T00:00:00Z", 1],
      ["2026-03-03T00:00:00Z", 1],
    ]);
  });

  it("answers hourly buckets for a range under a day", async () => {
    const body = await usage({
      start_time: "2026-03-01T09:00:00Z",
      end_time: "2026-03-01T11:00:00Z",
      workspace_ids: wsA,
    });
    expect(body.stride).toEqual({ days: 0, hours: 1 });
    expect(body.usage.map((r) => [r.time_bucket, r.traces])).toEqual([
      ["2026-03-01T09:00:00Z", 1],
      ["2026-03-01T10:00:00Z", 2],
    ]);
  });

  it("answers hourly buckets for a range under a day that widens to a whole UTC day, in JSON and CSV", async () => {
    // 23 h 59 min: hourly, though its whole hours cover 2026-03-01, which a daily rollup row holds.
    const params = {
      start_time: "2026-03-01T00:01:00Z",
      end_time: "2026-03-02T00:00:00Z",
      workspace_ids: wsA,
    };
    const body = await usage(params);
    expect(body.stride).toEqual({ days: 0, hours: 1 });
    const hourly = [
      ["2026-03-01T09:00:00Z", 1],
      ["2026-03-01T10:00:00Z", 2],
    ];
    expect(body.usage.map((r) => [r.time_bucket, r.traces])).toEqual(hourly);
    const { rows } = await csv(params);
    expect(rows.slice(1).map((r) => [r[0], r[1], Number(r[9])])).toEqual([
      ["2026-03-01T09:00:00Z", "2026-03-01T10:00:00Z", 1],
      ["2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z", 2],
    ]);
  });

  it.each([
    ["23 hours", "2026-03-01T23:00:00Z", { days: 0, hours: 1 }],
    ["1 day", "2026-03-02T00:00:00Z", { days: 1, hours: 0 }],
    ["31 days", "2026-04-01T00:00:00Z", { days: 1, hours: 0 }],
    ["31 days and 1 hour", "2026-04-01T01:00:00Z", { days: 7, hours: 0 }],
    ["93 days", "2026-06-02T00:00:00Z", { days: 7, hours: 0 }],
    ["93 days and 1 hour", "2026-06-02T01:00:00Z", { days: 30, hours: 0 }],
    ["366 days", "2027-03-02T00:00:00Z", { days: 30, hours: 0 }],
    ["366 days and 1 hour", "2027-03-02T01:00:00Z", { days: 365, hours: 0 }],
  ])("derives the stride of a range of %s", async (_name, end, stride) => {
    const body = await usage({ start_time: "2026-03-01T00:00:00Z", end_time: end, workspace_ids: wsA });
    expect(body.stride).toEqual(stride);
  });

  it("aligns weeks on Monday, months on the 1st and years on January 1st (UTC)", async () => {
    const range = { start_time: "2025-12-01T00:00:00Z", workspace_ids: wsA };
    const weekly = await usage({ ...range, end_time: "2026-03-01T00:00:00Z", aggregation: "weekly" });
    expect(weekly.stride).toEqual({ days: 7, hours: 0 });
    // 2025-12-31 is a Wednesday: its week starts on Monday the 29th.
    expect(weekly.usage.map((r) => [r.time_bucket, r.traces])).toEqual([["2025-12-29T00:00:00Z", 1]]);

    const monthly = await usage({ ...range, end_time: "2026-05-01T00:00:00Z" });
    expect(monthly.stride).toEqual({ days: 30, hours: 0 });
    expect(monthly.usage.map((r) => [r.time_bucket, r.traces])).toEqual([
      ["2025-12-01T00:00:00Z", 1],
      ["2026-03-01T00:00:00Z", 6],
      ["2026-04-01T00:00:00Z", 1],
    ]);

    const yearly = await usage({ ...range, end_time: "2027-06-01T00:00:00Z" });
    expect(yearly.stride).toEqual({ days: 365, hours: 0 });
    expect(yearly.usage.map((r) => [r.time_bucket, r.traces])).toEqual([
      ["2025-01-01T00:00:00Z", 1],
      ["2026-01-01T00:00:00Z", 7],
    ]);
  });

  it("groups by project, user and API key with the dimensions of each", async () => {
    const range = { start_time: "2026-03-01T00:00:00Z", end_time: "2026-03-08T00:00:00Z" };
    const byProject = await usage({
      ...range,
      workspace_ids: [wsA, wsB],
      group_by: "project",
      aggregation: "monthly",
    });
    expect(byProject.usage).toEqual([
      {
        time_bucket: "2026-03-01T00:00:00Z",
        dimensions: { project_id: projects.formula, project_name: '=HYPERLINK("x","y"), "quoted"' },
        traces: 1,
      },
      {
        time_bucket: "2026-03-01T00:00:00Z",
        dimensions: { project_id: projects.alpha, project_name: "alpha" },
        traces: 5,
      },
      {
        time_bucket: "2026-03-01T00:00:00Z",
        dimensions: { project_id: projects.beta, project_name: "beta" },
        traces: 1,
      },
    ]);

    const byUser = await usage({
      ...range,
      workspace_ids: [wsA, wsB],
      group_by: "user",
      aggregation: "monthly",
    });
    expect(byUser.usage).toEqual([
      {
        time_bucket: "2026-03-01T00:00:00Z",
        dimensions: { user_id: adminUser.id, user_email: adminUser.email },
        traces: 5,
      },
      // Sent with a service key: no user, but the group's keys are there, with null values.
      { time_bucket: "2026-03-01T00:00:00Z", dimensions: { user_id: null, user_email: null }, traces: 2 },
    ]);

    const byKey = await usage({
      ...range,
      workspace_ids: [wsA, wsB],
      group_by: "api_key",
      aggregation: "monthly",
    });
    // Labels sort bytewise (collation "C").
    const keys = [
      [{ api_key_short_key: adminKey.shortKey }, 5],
      [{ api_key_short_key: service.shortKey }, 2],
    ];
    if (service.shortKey < adminKey.shortKey) keys.reverse();
    expect(byKey.usage.map((r) => [r.dimensions, r.traces])).toEqual(keys);
  });

  it("answers the group's dimension keys with null values when the trace has none", async () => {
    // 2028-01-10: a trace sent with no key and no user, to a project that no longer exists.
    const range = {
      start_time: "2028-01-10T00:00:00Z",
      end_time: "2028-01-11T00:00:00Z",
      workspace_ids: wsA,
    };
    const dimensions = async (group_by: string) =>
      (await usage({ ...range, group_by })).usage.map((r) => [r.dimensions, r.traces]);
    expect(await dimensions("user")).toEqual([[{ user_id: null, user_email: null }, 1]]);
    expect(await dimensions("api_key")).toEqual([[{ api_key_short_key: null }, 1]]);
    expect(await dimensions("project")).toEqual([[{ project_id: projects.gone, project_name: null }, 1]]);
    // The same cells are empty in the CSV.
    const { rows } = await csv({ ...range, group_by: "project" });
    expect(rows.slice(1)).toEqual([
      ["2028-01-10T00:00:00Z", "2028-01-11T00:00:00Z", "", "", projects.gone, "", "", "", "", "1"],
    ]);
  });

  it("includes only the workspaces the caller can read", async () => {
    const range = { start_time: "2026-03-01T00:00:00Z", end_time: "2026-03-08T00:00:00Z" };
    const seen = await usage({ ...range, workspace_ids: [wsA, wsB, uuidv7()] }, service.key);
    expect(seen.usage.map((r) => [r.dimensions.workspace_id, r.traces])).toEqual([[wsB, 1]]);
    const none = await usage({ ...range, workspace_ids: wsA }, service.key);
    expect(none.usage).toEqual([]);
  });

  it("answers the same over Connect", async () => {
    const client = createClient(UsageService, t.client().transport);
    const response = await client.getGranularUsage({
      startTime: timestampFromDate(new Date("2026-03-01T00:00:00Z")),
      endTime: timestampFromDate(new Date("2026-03-08T00:00:00Z")),
      workspaceIds: [wsB],
      groupBy: "project",
    });
    expect(response.stride).toMatchObject({ days: 1, hours: 0 });
    expect(response.usage).toHaveLength(1);
    const dimensions = response.usage[0]?.dimensions;
    expect(dimensions && toJson(GranularUsageDimensionsSchema, dimensions)).toEqual({
      projectId: projects.beta,
      projectName: "beta",
    });
    expect(response.usage[0]?.traces).toBe(1);
    // The group's keys with no value are null over Connect too; the other groups' keys are unset.
    const byUser = await client.getGranularUsage({
      startTime: timestampFromDate(new Date("2028-01-10T00:00:00Z")),
      endTime: timestampFromDate(new Date("2028-01-11T00:00:00Z")),
      workspaceIds: [wsA],
      groupBy: "user",
    });
    const nobody = byUser.usage[0]?.dimensions;
    expect(nobody && toJson(GranularUsageDimensionsSchema, nobody)).toEqual({
      userId: null,
      userEmail: null,
    });
    const error = await client.getGranularUsage({ workspaceIds: [wsB] }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.rawMessage).toMatch(/start_time is required/);
  });

  const valid = { start_time: "2026-03-01T00:00:00Z", end_time: "2026-03-02T00:00:00Z" };
  const cases: [string, () => Record<string, string>, RegExp][] = [
    ["no start_time", () => ({ end_time: valid.end_time, workspace_ids: wsA }), /start_time is required/],
    ["no end_time", () => ({ start_time: valid.start_time, workspace_ids: wsA }), /end_time is required/],
    [
      "end before start",
      () => ({ start_time: valid.end_time, end_time: valid.start_time, workspace_ids: wsA }),
      /end_time must be after start_time/,
    ],
    [
      "end equal to start",
      () => ({ start_time: valid.start_time, end_time: valid.start_time, workspace_ids: wsA }),
      /end_time must be after start_time/,
    ],
    ["no workspace_ids", () => ({ ...valid }), /workspace_ids is required/],
    [
      "a workspace id that is not a UUID",
      () => ({ ...valid, workspace_ids: "nope" }),
      /workspace_ids: "nope" is not a UUID/,
    ],
    [
      "an unknown group_by",
      () => ({ ...valid, workspace_ids: wsA, group_by: "team" }),
      /group_by must be one of workspace, project, user, api_key/,
    ],
    [
      "an unknown aggregation",
      () => ({ ...valid, workspace_ids: wsA, aggregation: "hourly" }),
      /aggregation must be one of daily, weekly, monthly/,
    ],
    [
      "a malformed timestamp",
      () => ({ ...valid, start_time: "yesterday", workspace_ids: wsA }),
      /"start_time" must be an RFC 3339 timestamp/,
    ],
    [
      "an unknown parameter",
      () => ({ ...valid, workspace_ids: wsA, limit: "5" }),
      /unknown query parameter "limit"/,
    ],
  ];
  it.each(cases)("answers 422 with a detail for %s, as JSON and as CSV", async (_name, params, detail) => {
    for (const path of [USAGE, `${USAGE}/export`]) {
      const res = await t.fetch(`${path}?${query(params())}`);
      expect(res.status, path).toBe(422);
      expect(((await res.json()) as { detail: string }).detail).toMatch(detail);
    }
  });

  it("answers 401 without an API key, as JSON and as CSV", async () => {
    for (const path of [USAGE, `${USAGE}/export`]) {
      const res = await t.fetch(`${path}?${query({ ...valid, workspace_ids: wsA })}`, { apiKey: null });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/API key/);
    }
  });
});

describe("counting through the ingest", () => {
  /** A root run and its child, as the langsmith SDK posts them. */
  function traceRuns(project: string) {
    const root = uuidv7();
    const child = uuidv7();
    const rootOrder = `20260301T100000000000Z${root}`;
    const common = { session_name: project, run_type: "chain", inputs: {}, extra: {} };
    return {
      root: {
        ...common,
        id: root,
        trace_id: root,
        dotted_order: rootOrder,
        name: "root",
        start_time: "2026-03-01T10:00:00Z",
      },
      child: {
        ...common,
        id: child,
        trace_id: root,
        parent_run_id: root,
        dotted_order: `${rootOrder}.20260301T100001000000Z${child}`,
        name: "child",
        start_time: "2026-03-01T10:00:01Z",
      },
    };
  }

  async function tracesNow(): Promise<Map<string, number>> {
    const now = Date.now();
    const body = await usage({
      start_time: new Date(now - 2 * 3_600_000).toISOString(),
      end_time: new Date(now + 2 * 3_600_000).toISOString(),
      workspace_ids: wsA,
      group_by: "project",
    });
    const byProject = new Map<string, number>();
    for (const r of body.usage) {
      const name = r.dimensions.project_name ?? "";
      byProject.set(name, (byProject.get(name) ?? 0) + r.traces);
    }
    return byProject;
  }

  it("counts a trace once, when its root is first received; children, re-sends and patches add nothing", async () => {
    const pool = createSql(t.databaseUrl, { max: 2, statementTimeoutMs: 0, applicationName: "usage-test" });
    try {
      const ingest = createIngestService({ sql: pool, usageReporting: true });
      const actor = { workspaceId: wsA, userId: adminUser.id, apiKeyId: adminKey.id };
      const first = traceRuns("ingested-1");
      const second = traceRuns("ingested-2");
      await ingest.ingestRuns(actor, { post: [first.root, first.child] });
      await ingest.ingestRuns(actor, {
        post: [first.root],
        patch: [{ ...first.root, end_time: "2026-03-01T10:00:05Z" }],
      });
      await ingest.ingestRuns(actor, { post: [second.child] });
      await ingest.ingestRuns(actor, { post: [second.root] });
      await ingest.ingestRuns(actor, { post: [second.root, second.child] });
      const counted = await tracesNow();
      expect(counted.get("ingested-1")).toBe(1);
      expect(counted.get("ingested-2")).toBe(1);

      const off = createIngestService({ sql: pool, usageReporting: false });
      await off.ingestRuns(actor, { post: [traceRuns("ingested-1").root, traceRuns("not-counted").root] });
      const after = await tracesNow();
      expect(after.get("ingested-1")).toBe(1);
      expect(after.has("not-counted")).toBe(false);
    } finally {
      await pool.end();
    }
  });
  it("attributes traces posted to the ingest API to the sending key and its user", async () => {
    const now = Date.now();
    const around = {
      start_time: new Date(now - 2 * 3_600_000).toISOString(),
      end_time: new Date(now + 2 * 3_600_000).toISOString(),
      workspace_ids: wsA,
    };
    const total = async (group_by: string, key: string, value: string) =>
      (await usage({ ...around, group_by })).usage
        .filter((r) => r.dimensions[key] === value)
        .reduce((sum, r) => sum + r.traces, 0);
    const keyBefore = await total("api_key", "api_key_short_key", adminKey.shortKey);
    const userBefore = await total("user", "user_id", adminUser.id);

    const first = traceRuns("via-http");
    const second = traceRuns("via-http");
    const res = await t.fetch("/api/v1/runs/batch", {
      method: "POST",
      tenantId: wsA,
      body: JSON.stringify({ post: [first.root, first.child, second.root], patch: [] }),
    });
    expect(res.status, await res.clone().text()).toBe(202);

    expect(await total("project", "project_name", "via-http")).toBe(2);
    expect(await total("api_key", "api_key_short_key", adminKey.shortKey)).toBe(keyBefore + 2);
    expect(await total("user", "user_id", adminUser.id)).toBe(userBefore + 2);
  });
});

describe("GET /api/v1/orgs/current/billing/granular-usage/export", () => {
  it("returns the same records as the JSON API, with all ten columns in order", async () => {
    for (const group_by of ["workspace", "project", "user", "api_key"]) {
      const params = {
        start_time: "2026-03-01T00:00:00Z",
        end_time: "2026-03-08T00:00:00Z",
        workspace_ids: [wsA, wsB],
        group_by,
      };
      const json = await usage(params);
      const { res, rows } = await csv(params);
      expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
      expect(res.headers.get("content-disposition")).toBe(
        'attachment; filename="granular-usage-20260301T000000Z-20260308T000000Z.csv"',
      );
      expect(rows[0]).toEqual([...USAGE_CSV_COLUMNS]);
      const undefuse = (cell: string) => (cell.startsWith("\t") ? cell.slice(1) : cell);
      const fromCsv = rows.slice(1).map((row) => {
        const [start, end, wsId, wsName, projectId, projectName, userId, userEmail, shortKey, traces] =
          row.map(undefuse);
        expect(Date.parse(end ?? "") - Date.parse(start ?? "")).toBe(24 * 3_600_000);
        const dims = {
          workspace_id: wsId,
          workspace_name: wsName,
          project_id: projectId,
          project_name: projectName,
          user_id: userId,
          user_email: userEmail,
          api_key_short_key: shortKey,
        };
        // The group's columns are its dimension keys, an empty cell a null value; the others are empty.
        const keys = GROUP_KEYS[group_by] ?? [];
        for (const [key, value] of Object.entries(dims)) if (!keys.includes(key)) expect(value, key).toBe("");
        return {
          time_bucket: start,
          dimensions: Object.fromEntries(keys.map((key) => [key, dims[key as keyof typeof dims] || null])),
          traces: Number(traces),
        };
      });
      expect(fromCsv).toEqual(json.usage);
    }
  });

  it("writes the header line when no trace matches", async () => {
    const res = await t.fetch(
      `${USAGE}/export?${query({ start_time: "2024-06-01T00:00:00Z", end_time: "2024-06-02T00:00:00Z", workspace_ids: wsA })}`,
    );
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(USAGE_CSV_COLUMNS.join(","));
  });

  it("ends a monthly bucket at the next calendar month", async () => {
    const { rows } = await csv({
      start_time: "2026-01-01T00:00:00Z",
      end_time: "2026-06-01T00:00:00Z",
      workspace_ids: wsA,
    });
    expect(rows.slice(1).map((r) => [r[0], r[1], r[9]])).toEqual([
      ["2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z", "6"],
      ["2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z", "1"],
    ]);
  });

  it("defuses cells a spreadsheet would run as formulas and quotes commas and quotes", async () => {
    const res = await t.fetch(
      `${USAGE}/export?${query({ start_time: "2026-03-01T00:00:00Z", end_time: "2026-03-02T00:00:00Z", workspace_ids: wsA, group_by: "project" })}`,
    );
    const text = await res.text();
    expect(text).toContain(`,"\t=HYPERLINK(""x"",""y""), ""quoted""",`);
    const { rows } = await csv({
      start_time: "2026-03-01T00:00:00Z",
      end_time: "2026-03-02T00:00:00Z",
      workspace_ids: wsA,
      group_by: "project",
    });
    expect(rows.map((r) => r[5])).toContain('\t=HYPERLINK("x","y"), "quoted"');
    expect(rows.map((r) => r[5])).toContain("alpha");
  });
});
