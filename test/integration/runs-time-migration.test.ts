/**
 * Migration 0034 fixes runs stored ending before they start (the langsmith JS SDK's
 * execution-order microseconds on start_time against a millisecond end_time), and keeps them so.
 */
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { loadMigrations, migrate } from "../../server/store/migrate.js";
import { useTestDatabase } from "../support/database.js";

const db = useTestDatabase({ migrated: false });

it("moves every end before its start to the start, and refuses such rows afterwards", async () => {
  const { sql } = db();
  const all = await loadMigrations();
  await migrate(
    sql,
    all.filter((m) => m.version < 34),
  );
  const [workspace, project, backwards, forwards] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  // As text: the driver's timestamp parameters go through a Date, which keeps only milliseconds.
  const insert = (id: string, start: string, end: string) => sql`
    insert into runs (id, workspace_id, session_id, trace_id, name, run_type, start_time, end_time, status,
      is_root, dotted_order)
    values (${id}, ${workspace}, ${project}, ${id}, 'r', 'chain', ${start}::text::timestamptz,
      ${end}::text::timestamptz, 'success', true, 'x')`;
  await insert(backwards, "2026-12-02T04:51:00.262003Z", "2026-12-02T04:51:00.262Z");
  await insert(forwards, "2026-12-02T04:51:00.262003Z", "2026-12-02T04:51:00.264Z");
  await migrate(sql, all);
  const rows = await sql<{ id: string; end: string }[]>`
    select id, to_char(end_time at time zone 'UTC', 'HH24:MI:SS.US') as end from runs order by end_time`;
  expect(Object.fromEntries(rows.map((r) => [r.id, r.end]))).toEqual({
    [backwards]: "04:51:00.262003",
    [forwards]: "04:51:00.264000",
  });
  await expect(insert(randomUUID(), "2026-12-02T04:51:00.5Z", "2026-12-02T04:51:00.4Z")).rejects.toThrow(
    /runs_end_not_before_start/,
  );
});
