import type { Sql } from "../../server/store/db.js";

/** Runs generated per statement, so one statement's memory stays small. */
const CHUNK = 100_000;

/**
 * Inserts `count` runs shaped like what the langsmith SDK sends for an LLM app, spread over the UTC
 * day starting at `day`: traces of four runs (a chain with an llm call, a tool call and a second llm
 * call), chat messages as inputs, generations as outputs (about 1.2 kB of JSON per run, 1.9 kB per row as exported), SDK
 * metadata with token usage in `extra`, start and end events, two tags, token counts and costs.
 * Texts vary per run (md5 of its number) so compression sees realistic entropy.
 */
export async function seedRuns(
  sql: Sql,
  target: { workspaceId: string; sessionId: string; day: Date; count: number },
): Promise<void> {
  // 80 ms apart: a million runs fill 22 of the day's 24 hours.
  const spacingSeconds = 0.08;
  for (let from = 0; from < target.count; from += CHUNK) {
    const to = Math.min(from + CHUNK, target.count) - 1;
    await sql`
      insert into runs (
        id, workspace_id, session_id, trace_id, parent_run_id, parent_run_ids, name, run_type,
        start_time, end_time, status, is_root, dotted_order, inputs, outputs, extra, events, tags,
        total_tokens, prompt_tokens, completion_tokens, total_cost, prompt_cost, completion_cost,
        first_token_time)
      select
        r.id, ${target.workspaceId}, ${target.sessionId}, r.trace_id,
        case when r.pos = 0 then null else r.trace_id end,
        case when r.pos = 0 then '{}'::uuid[] else array[r.trace_id] end,
        (array['agent', 'ChatOpenAI', 'search_catalogue', 'ChatOpenAI'])[r.pos + 1],
        (array['chain', 'llm', 'tool', 'llm'])[r.pos + 1],
        r.start, r.start + interval '1.5 seconds', 'success', r.pos = 0,
        case when r.pos = 0 then r.root_order else r.root_order || '.' || r.own_order end,
        jsonb_build_object('messages', jsonb_build_array(
          jsonb_build_object('role', 'system', 'content', 'You are a helpful assistant that answers questions about the product catalogue.'),
          jsonb_build_object('role', 'user', 'content', 'Question ' || r.i || ': ' || repeat(r.h || ' ', 3)))),
        jsonb_build_object(
          'generations', jsonb_build_array(jsonb_build_object(
            'text', 'Answer: ' || repeat(md5((r.i + 1)::text) || ' ', 4),
            'generation_info', jsonb_build_object('finish_reason', 'stop', 'logprobs', null))),
          'llm_output', jsonb_build_object('model_name', 'gpt-4o-mini', 'token_usage',
            jsonb_build_object('prompt_tokens', 50 + r.i % 100, 'completion_tokens', 80 + r.i % 50))),
        jsonb_build_object(
          'metadata', jsonb_build_object('ls_provider', 'openai', 'ls_model_name', 'gpt-4o-mini',
            'ls_run_depth', r.pos, 'thread_id', md5((r.i / 4)::text),
            'usage_metadata', jsonb_build_object('input_tokens', 50 + r.i % 100, 'output_tokens', 80 + r.i % 50)),
          'runtime', jsonb_build_object('sdk', 'langsmith-js', 'sdk_version', '0.10.5', 'runtime', 'nodejs', 'platform', 'linux')),
        jsonb_build_array(
          jsonb_build_object('name', 'start', 'time', to_char(r.start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')),
          jsonb_build_object('name', 'end', 'time', to_char((r.start + interval '1.5 seconds') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))),
        array['bench', 'variant-' || (r.i % 5)],
        130 + r.i % 150, 50 + r.i % 100, 80 + r.i % 50,
        (130 + r.i % 150) * 0.0000006, (50 + r.i % 100) * 0.00000015, (80 + r.i % 50) * 0.0000006,
        case when r.pos in (1, 3) then r.start + interval '0.2 seconds' end
      from (
        select g.i, g.i % 4 as pos, md5(g.i::text) as h,
          ${target.day}::timestamptz + make_interval(secs => g.i * ${spacingSeconds}::float8) as start,
          (lpad(to_hex(g.i), 8, '0') || '-0000-7000-8000-' || substr(md5(g.i::text), 1, 12))::uuid as id,
          (lpad(to_hex(g.i - g.i % 4), 8, '0') || '-0000-7000-8000-' || substr(md5((g.i - g.i % 4)::text), 1, 12))::uuid as trace_id,
          to_char((${target.day}::timestamptz + make_interval(secs => (g.i - g.i % 4) * ${spacingSeconds}::float8)) at time zone 'UTC', 'YYYYMMDD"T"HH24MISSUS"Z"')
            || (lpad(to_hex(g.i - g.i % 4), 8, '0') || '-0000-7000-8000-' || substr(md5((g.i - g.i % 4)::text), 1, 12)) as root_order,
          to_char((${target.day}::timestamptz + make_interval(secs => g.i * ${spacingSeconds}::float8)) at time zone 'UTC', 'YYYYMMDD"T"HH24MISSUS"Z"')
            || (lpad(to_hex(g.i), 8, '0') || '-0000-7000-8000-' || substr(md5(g.i::text), 1, 12)) as own_order
        from generate_series(${from}::int, ${to}::int) as g(i)
      ) as r`;
  }
  await sql`analyze runs`;
}
