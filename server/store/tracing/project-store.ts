import { uuidv7 } from "../../ids.js";
import type { Queryable } from "../db.js";
import type { JsonObject } from "./trace-rows.js";
import type { WorkspaceBound } from "./workspace-scope.js";

/** A tracing project row, with statistics over its runs. */
export interface ProjectRecord {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  /** `extra.metadata` of the project. */
  metadata: JsonObject;
  /** `extra` of the project, without `metadata`. */
  extra: JsonObject;
  referenceDatasetId: string | null;
  defaultDatasetId: string | null;
  traceTier: string | null;
  startTime: Date;
  endTime: Date | null;
  stats: ProjectStats;
}

/** Statistics over a project's runs; a trace is a root run. */
export interface ProjectStats {
  /** Number of traces. */
  runCount: number;
  lastRunStartTime: Date | null;
  /** Latency percentiles of finished traces, in seconds. */
  latencyP50: number | null;
  latencyP99: number | null;
  totalTokens: number;
  promptTokens: number;
  completionTokens: number;
  /** Decimal strings; null when no run has a cost. */
  totalCost: string | null;
  promptCost: string | null;
  completionCost: string | null;
  /** Share of traces that ended in error; null without traces. */
  errorRate: number | null;
}

/** The fields of a new project. */
export interface NewProject {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  metadata: JsonObject;
  extra: JsonObject;
  referenceDatasetId: string | null;
  defaultDatasetId: string | null;
  traceTier: string | null;
  startTime: Date | null;
  endTime: Date | null;
}

/** Filters of {@link listProjects}; every one given must hold. */
export interface ProjectFilter {
  ids?: string[];
  name?: string;
  nameContains?: string;
  referenceDatasetId?: string;
  referenceFree?: boolean;
  metadata?: JsonObject;
  limit: number;
  offset: number;
}

interface ProjectRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  metadata: JsonObject;
  extra: JsonObject;
  reference_dataset_id: string | null;
  default_dataset_id: string | null;
  trace_tier: string | null;
  start_time: Date;
  end_time: Date | null;
  run_count: number;
  last_run_start_time: Date | null;
  latency_p50: number | null;
  latency_p99: number | null;
  total_tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_cost: string | null;
  prompt_cost: string | null;
  completion_cost: string | null;
  error_rate: number | null;
}

/** Projects with their statistics, computed from the project's runs in one pass. */
function selectProjects(q: Queryable) {
  return q`
    select p.id, p.workspace_id, p.name, p.description, p.metadata, p.extra, p.reference_dataset_id,
           p.default_dataset_id, p.trace_tier, p.start_time, p.end_time, s.*
    from tracing_projects p
    left join lateral (
      select
        (count(*) filter (where r.is_root))::int as run_count,
        max(r.start_time) as last_run_start_time,
        (percentile_cont(0.5) within group (order by extract(epoch from r.end_time - r.start_time))
          filter (where r.is_root and r.end_time is not null))::float8 as latency_p50,
        (percentile_cont(0.99) within group (order by extract(epoch from r.end_time - r.start_time))
          filter (where r.is_root and r.end_time is not null))::float8 as latency_p99,
        -- Root runs carry their trace's totals (migration 0017): summing every run would count
        -- each LLM call twice.
        coalesce(sum(r.total_tokens) filter (where r.is_root), 0)::float8 as total_tokens,
        coalesce(sum(r.prompt_tokens) filter (where r.is_root), 0)::float8 as prompt_tokens,
        coalesce(sum(r.completion_tokens) filter (where r.is_root), 0)::float8 as completion_tokens,
        (sum(r.total_cost) filter (where r.is_root))::text as total_cost,
        (sum(r.prompt_cost) filter (where r.is_root))::text as prompt_cost,
        (sum(r.completion_cost) filter (where r.is_root))::text as completion_cost,
        ((count(*) filter (where r.is_root and r.status = 'error'))::float8
          / nullif(count(*) filter (where r.is_root), 0)) as error_rate
      from runs r
      where r.workspace_id = p.workspace_id and r.session_id = p.id
    ) s on true`;
}

/** Inserts a project; a taken name fails with a unique violation. */
export async function insertProject(q: WorkspaceBound, p: NewProject): Promise<void> {
  await q`
    insert into tracing_projects (
      id, workspace_id, name, description, metadata, extra, reference_dataset_id, default_dataset_id,
      trace_tier, start_time, end_time)
    values (
      ${p.id}, ${p.workspaceId}, ${p.name}, ${p.description}, ${q.json(p.metadata as never)},
      ${q.json(p.extra as never)}, ${p.referenceDatasetId}, ${p.defaultDatasetId}, ${p.traceTier},
      coalesce(${p.startTime}::timestamptz, now()), ${p.endTime})`;
}

/** One project of a workspace by id, or undefined. */
export async function findProject(
  q: WorkspaceBound,
  workspaceId: string,
  id: string,
): Promise<ProjectRecord | undefined> {
  const [row] = await q<ProjectRow[]>`
    ${selectProjects(q)} where p.workspace_id = ${workspaceId} and p.id = ${id}`;
  return row && toRecord(row);
}

/** One project of a workspace by name, or undefined. */
export async function findProjectByName(
  q: WorkspaceBound,
  workspaceId: string,
  name: string,
): Promise<ProjectRecord | undefined> {
  const [row] = await q<ProjectRow[]>`
    ${selectProjects(q)} where p.workspace_id = ${workspaceId} and p.name = ${name}`;
  return row && toRecord(row);
}

/** A page of a workspace's projects, newest first. */
export async function listProjects(
  q: WorkspaceBound,
  workspaceId: string,
  f: ProjectFilter,
): Promise<ProjectRecord[]> {
  const rows = await q<ProjectRow[]>`
    ${selectProjects(q)}
    where p.workspace_id = ${workspaceId}
      ${f.ids ? q`and p.id = any(${f.ids}::uuid[])` : q``}
      ${f.name !== undefined ? q`and p.name = ${f.name}` : q``}
      ${f.nameContains !== undefined ? q`and strpos(lower(p.name), lower(${f.nameContains})) > 0` : q``}
      ${f.referenceDatasetId !== undefined ? q`and p.reference_dataset_id = ${f.referenceDatasetId}` : q``}
      ${f.referenceFree === true ? q`and p.reference_dataset_id is null` : q``}
      ${f.referenceFree === false ? q`and p.reference_dataset_id is not null` : q``}
      ${f.metadata !== undefined ? q`and p.metadata @> ${q.json(f.metadata as never)}` : q``}
    order by p.start_time desc, p.id desc
    limit ${f.limit} offset ${f.offset}`;
  return rows.map(toRecord);
}

/** Changes the given fields of a project; false when the workspace has no such project. */
export async function updateProject(
  q: WorkspaceBound,
  workspaceId: string,
  id: string,
  change: {
    name?: string;
    description?: string;
    metadata?: JsonObject;
    extra?: JsonObject;
    endTime?: Date;
  },
): Promise<boolean> {
  const rows = await q`
    update tracing_projects set
      name = coalesce(${change.name ?? null}, name),
      description = coalesce(${change.description ?? null}, description),
      metadata = coalesce(${change.metadata ? q.json(change.metadata as never) : null}::jsonb, metadata),
      extra = coalesce(${change.extra ? q.json(change.extra as never) : null}::jsonb, extra),
      end_time = coalesce(${change.endTime ?? null}::timestamptz, end_time),
      updated_at = now()
    where workspace_id = ${workspaceId} and id = ${id}
    returning id`;
  return rows.length > 0;
}

/**
 * Deletes a project, its runs (by the trigger of migration 0027) and their feedback and attachments; false when the
 * workspace has no such project.
 */
export async function deleteProject(q: WorkspaceBound, workspaceId: string, id: string): Promise<boolean> {
  await q`
    delete from run_feedback f using runs r
    where f.workspace_id = ${workspaceId} and r.workspace_id = ${workspaceId} and r.session_id = ${id}
      and f.run_id = r.id`;
  await q`
    delete from run_attachments a using runs r
    where a.workspace_id = ${workspaceId} and r.workspace_id = ${workspaceId} and r.session_id = ${id}
      and a.run_id = r.id`;
  const rows =
    await q`delete from tracing_projects where workspace_id = ${workspaceId} and id = ${id} returning id`;
  return rows.length > 0;
}

/**
 * Times {@link ensureProjectsByName} creates a name again that a concurrent delete removed between
 * its insert and its lock. Each retry needs another delete of the same name to commit in that gap.
 */
const ENSURE_ATTEMPTS = 3;

/**
 * The ids of the named projects of a workspace, creating those that do not exist yet (ingest's
 * auto-creation), each locked FOR KEY SHARE until the transaction ends, so that no project is
 * deleted while the transaction writes runs into it (migration 0027). Safe under concurrent
 * ingests of the same new name and concurrent deletes of it.
 *
 * Nearly every batch names projects that exist: they are looked up and locked first, alone, one
 * statement; only names not found then cost the insert and a second look-up.
 */
export async function ensureProjectsByName(
  q: WorkspaceBound,
  workspaceId: string,
  names: readonly string[],
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (names.length === 0) return found;
  // A row that a concurrent delete removes while this waits for its lock is left out: created below.
  for (const r of await keySharedByName(q, workspaceId, names)) found.set(r.name, r.id);
  let missing = names.filter((name) => !found.has(name));
  for (let attempt = 0; attempt < ENSURE_ATTEMPTS && missing.length > 0; attempt++) {
    const ids = missing.map(() => uuidv7());
    // Two statements sent together: the select, with a snapshot of its own taken after the insert,
    // sees a row that a concurrent ingest committed while the insert waited on it. A row that a
    // concurrent delete removes while the select waits for its lock is left out: created again by
    // the next attempt.
    const [, rows] = await Promise.all([
      q`
        insert into tracing_projects (id, workspace_id, name)
        select id, ${workspaceId}::uuid, name from unnest(${ids}::uuid[], ${missing}::text[]) as n (id, name)
        order by name
        on conflict (workspace_id, name) do nothing`,
      keySharedByName(q, workspaceId, missing),
    ]);
    for (const r of rows) found.set(r.name, r.id);
    missing = missing.filter((name) => !found.has(name));
  }
  return found;
}

/**
 * Locks the named projects FOR KEY SHARE until the transaction ends, as {@link ensureProjectsByName}
 * does, and answers whether each still exists with the id `expected` gives it: a remembered id (see
 * project-ids-by-name.ts) that a rename, a delete or a re-creation made stale answers false. The lock
 * keeps the answer true until the transaction ends: a rename or delete of a project waits for it.
 */
export async function confirmProjectIds(
  q: WorkspaceBound,
  workspaceId: string,
  expected: ReadonlyMap<string, string>,
): Promise<boolean> {
  if (expected.size === 0) return true;
  const rows = await keySharedByName(q, workspaceId, [...expected.keys()].sort());
  return rows.length === expected.size && rows.every((r) => expected.get(r.name) === r.id);
}

/** The named projects of a workspace that exist, locked FOR KEY SHARE (in name order). */
function keySharedByName(q: WorkspaceBound, workspaceId: string, names: readonly string[]) {
  return q<{ id: string; name: string }[]>`
    select id, name from tracing_projects where workspace_id = ${workspaceId} and name = any(${[...names]}::text[])
    order by name
    for key share`;
}

/**
 * Which of the given project ids exist in the workspace, each locked FOR KEY SHARE until the
 * transaction ends (see {@link ensureProjectsByName}).
 */
export async function existingProjectIds(
  q: WorkspaceBound,
  workspaceId: string,
  ids: readonly string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await q<{ id: string }[]>`
    select id from tracing_projects where workspace_id = ${workspaceId} and id = any(${ids as string[]}::uuid[])
    order by id
    for key share`;
  return new Set(rows.map((r) => r.id));
}

function toRecord(row: ProjectRow): ProjectRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    description: row.description,
    metadata: row.metadata,
    extra: row.extra,
    referenceDatasetId: row.reference_dataset_id,
    defaultDatasetId: row.default_dataset_id,
    traceTier: row.trace_tier,
    startTime: row.start_time,
    endTime: row.end_time,
    stats: {
      runCount: row.run_count,
      lastRunStartTime: row.last_run_start_time,
      latencyP50: row.latency_p50,
      latencyP99: row.latency_p99,
      totalTokens: row.total_tokens,
      promptTokens: row.prompt_tokens,
      completionTokens: row.completion_tokens,
      totalCost: row.total_cost,
      promptCost: row.prompt_cost,
      completionCost: row.completion_cost,
      errorRate: row.error_rate,
    },
  };
}
