/**
 * Random `POST /api/v1/runs/query` bodies: every parameter of QueryRunsRequest (filter, query,
 * trace_filter, tree_filter, session, run_type, is_root, error, trace, parent_run, id,
 * reference_example, start_time, end_time, select, order, limit, cursor), alone or combined, with
 * values drawn from stored data of every workspace.
 */

import { encodeRunCursor } from "../../server/services/tracing/run-cursor.js";
import { RUN_FIELDS } from "../../server/services/tracing/run-fields.js";
import {
  type FilterCoverage,
  type FilterVocabulary,
  invalidRunFilter,
  randomRunFilter,
} from "./run-filter-generator.js";
import type { Random } from "./seeded-random.js";

/** Ids and keys of every workspace, for the parameters that take them. */
export interface RunQueryPools {
  /** Tracing project ids (every workspace's, plus one that exists nowhere). */
  projectIds: string[];
  /** Run ids of every workspace. */
  runIds: string[];
  /** Trace ids of every workspace. */
  traceIds: string[];
  /** Runs whose (start_time, id) make cursors: as if a page had ended on them. */
  cursorRuns: { start_time: string; id: string }[];
  /** Dataset example ids runs were made for. */
  exampleIds: string[];
}

/** Page sizes to pick from: small ones page (and use cursors) most. */
const LIMITS = [1, 2, 3, 5, 10, 25, 100];

/** A random QueryRuns body in REST form (snake_case); `select` always holds `app_path`. */
export function randomRunQuery(
  random: Random,
  vocabulary: FilterVocabulary,
  pools: RunQueryPools,
  coverage: FilterCoverage,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const filter = () =>
    random.chance(0.03)
      ? invalidRunFilter(random, vocabulary)
      : randomRunFilter(random, vocabulary, coverage);
  if (random.chance(0.65)) body.filter = filter();
  if (random.chance(0.15)) {
    const text = random.pick(vocabulary.texts);
    body.query = random.chance(0.5) ? text : text.slice(0, random.int(1, text.length)).toLowerCase();
  }
  if (random.chance(0.2)) body.trace_filter = filter();
  if (random.chance(0.2)) body.tree_filter = filter();
  if (random.chance(0.2)) body.session = [random.pick(pools.projectIds), ...random.some(pools.projectIds, 1)];
  if (random.chance(0.1)) body.run_type = random.pick(vocabulary.columns.run_type ?? ["chain"]);
  if (random.chance(0.2)) body.is_root = random.chance(0.5);
  if (random.chance(0.1)) body.error = random.chance(0.5);
  if (random.chance(0.1)) body.trace = random.pick(pools.traceIds);
  if (random.chance(0.1)) body.parent_run = random.pick(pools.runIds);
  if (random.chance(0.1)) body.id = [random.pick(pools.runIds), ...random.some(pools.runIds, 3)];
  if (random.chance(0.05))
    body.reference_example = random.chance(0.5) ? random.pick(pools.exampleIds) : pools.exampleIds;
  const times = (vocabulary.columns.start_time ?? []).map(String);
  if (random.chance(0.1)) body.start_time = random.pick(times);
  if (random.chance(0.1)) body.end_time = random.pick(times);
  if (random.chance(0.25)) body.select = [...random.some(RUN_FIELDS, 6), "app_path"];
  if (random.chance(0.5)) body.order = random.pick(["asc", "desc"]);
  if (random.chance(0.7)) body.limit = random.pick(LIMITS);
  if (random.chance(0.15)) {
    const run = random.pick(pools.cursorRuns);
    body.cursor = encodeRunCursor({ startTime: run.start_time, id: run.id });
  }
  return body;
}
