import type { Queryable } from "../db.js";
import type { RollupCover, TimeRange, UsageUnit } from "./usage-ranges.js";
import type { WorkspaceBound } from "./workspace-scope.js";

/** A rollup dimension: what traces are counted by. */
export type UsageDimension = "workspace" | "project" | "user" | "api_key";

/** Traces of one dimension value in one bucket. */
export interface UsageBucketRow {
  /** Start of the bucket, aligned on the unit (UTC). */
  bucket: Date;
  /** The workspace, project, user or API key id (the nil UUID for "none"). */
  dimensionId: string;
  /** Display name, email or short key of the dimension value; null when it no longer exists. */
  label: string | null;
  /** Traces counted. */
  traces: number;
}

/** What {@link queryUsage} sums. */
export interface UsageQuery {
  /** The organization the workspaces belong to (scopes the user and key lookups). */
  organizationId: string;
  /** Workspaces to count, already checked to be readable by the caller. */
  workspaceIds: string[];
  dimension: UsageDimension;
  unit: UsageUnit;
  /** The rollup rows covering the requested range. */
  cover: RollupCover;
}

interface Row {
  bucket: Date;
  dimension_id: string;
  label: string | null;
  traces: string;
}

/**
 * Sums the rollups of the given workspaces into buckets of `unit`, per dimension value, with each
 * value's label, oldest bucket first, then by label (bytewise, so the order is the same on every
 * server) and id. Reads daily rows for whole days and
 * hourly rows for the edges, through the primary key, so its cost is the number of rollup rows in
 * the range, independent of the number of traces.
 */
export async function queryUsage(q: WorkspaceBound, query: UsageQuery): Promise<UsageBucketRow[]> {
  const { cover } = query;
  const [early, late] = cover.hours;
  const label = labelOf(q, query);
  const rows = await q<Row[]>`
    with picked as (
      ${rollupRows(q, query, "day", cover.days)}
      union all
      ${rollupRows(q, query, "hour", early)}
      union all
      ${rollupRows(q, query, "hour", late)}
    ), grouped as (
      -- date_trunc on the UTC wall time, not date_trunc(unit, timestamptz, 'UTC'): that form looks
      -- the zone up on every row and costs more than the scan itself.
      select date_trunc(${query.unit}, bucket_start at time zone 'UTC') as bucket, dimension_id,
             sum(traces) as traces
      from picked group by 1, 2
    ), labels as (
      select d.dimension_id, ${label} as label from (select distinct dimension_id from grouped) d
    )
    select g.bucket at time zone 'UTC' as bucket, g.dimension_id, l.label, g.traces::text
    from grouped g join labels l on l.dimension_id = g.dimension_id
    order by g.bucket, l.label collate "C" nulls last, g.dimension_id`;
  return rows.map((r) => ({
    bucket: r.bucket,
    dimensionId: r.dimension_id,
    label: r.label,
    traces: Number(r.traces),
  }));
}

/** The rollup rows of one granularity with bucket_start in `range`: one range scan of the primary key. */
function rollupRows(q: Queryable, query: UsageQuery, granularity: "hour" | "day", range: TimeRange) {
  return q`
    select bucket_start, dimension_id, traces from usage_rollups
    where workspace_id = any(${query.workspaceIds}::uuid[]) and dimension = ${query.dimension}
      and granularity = ${granularity} and bucket_start >= ${range.from} and bucket_start < ${range.to}`;
}

/** The label of `d.dimension_id`, looked up within the caller's organization and workspaces. */
function labelOf(q: Queryable, { dimension, organizationId, workspaceIds }: UsageQuery) {
  switch (dimension) {
    case "workspace":
      return q`(select w.display_name from workspaces w where w.id = d.dimension_id)`;
    case "project":
      return q`(select p.name from tracing_projects p
                where p.id = d.dimension_id and p.workspace_id = any(${workspaceIds}::uuid[]))`;
    case "user":
      // The id comes from this organization's rollups, so the user sent traces here; their email
      // stays visible after they leave, as billing history.
      return q`(select u.email from users u where u.id = d.dimension_id)`;
    case "api_key":
      return q`(select k.short_key from api_keys k
                where k.id = d.dimension_id and k.organization_id = ${organizationId})`;
  }
}
