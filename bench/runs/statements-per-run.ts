/**
 * The statements of a runs bench cell, per run: `pg_stat_statements` (loaded with the bench's
 * STATEMENT_STATS_SETTINGS, reset before the cell) read after it, each statement's calls, rows,
 * planning and execution time divided by the runs the cell completed.
 */
import type { Sql } from "../../server/store/db.js";
import { tableRow } from "../support/table-row.js";

/** Characters of a statement's text shown: enough to tell the run engine's statements apart. */
const QUERY_CHARS = 120;

/** One statement of a cell, per completed run. */
export interface StatementPerRun {
  calls: number;
  rows: number;
  /** Execution time in ms (wall time in the backend: lock waits count). */
  execMs: number;
  /** Planning time in ms: a prepared statement Postgres plans afresh for each call shows here. */
  planMs: number;
  query: string;
}

/**
 * The `top` statements of `database` by calls since the last reset, top-level only (statements run
 * by triggers or functions are part of the statement that ran them), per `runs`. `admin` may be
 * connected to any database of the cluster: `pg_stat_statements` is cluster-wide.
 */
export async function statementsPerRun(
  admin: Sql,
  database: string,
  top: number,
  runs: number,
): Promise<StatementPerRun[]> {
  const rows = await admin<
    { calls: string; rows: string; exec_ms: number; plan_ms: number; query: string }[]
  >`
    select calls, rows, total_exec_time as exec_ms, total_plan_time as plan_ms, query
    from pg_stat_statements
    where dbid = (select oid from pg_database where datname = ${database}) and toplevel
      and query not like '%pg_stat_statements%' and query not like '%pg_stat_activity%'
    order by calls desc, total_exec_time desc
    limit ${top}`;
  return rows.map((r) => ({
    calls: Number(r.calls) / runs,
    rows: Number(r.rows) / runs,
    execMs: r.exec_ms / runs,
    planMs: r.plan_ms / runs,
    query: r.query.replace(/\s+/g, " ").slice(0, QUERY_CHARS),
  }));
}

/** Prints what {@link statementsPerRun} read, with their sum. */
export function printStatementsPerRun(rows: readonly StatementPerRun[], title: string): void {
  const widths = [9, 9, 9, 9, 0];
  console.log(`\n${title}`);
  console.log(tableRow(["calls", "rows", "plan ms", "exec ms", "statement"], widths));
  for (const r of rows)
    console.log(
      tableRow(
        [r.calls.toFixed(2), r.rows.toFixed(2), r.planMs.toFixed(3), r.execMs.toFixed(3), r.query],
        widths,
      ),
    );
  const sum = (f: (r: StatementPerRun) => number) => rows.reduce((total, r) => total + f(r), 0);
  console.log(
    tableRow(
      [
        sum((r) => r.calls).toFixed(2),
        "",
        sum((r) => r.planMs).toFixed(3),
        sum((r) => r.execMs).toFixed(3),
        "(listed)",
      ],
      widths,
    ),
  );
}
