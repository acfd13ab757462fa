import type { Sql } from "../store/db.js";

/** The jobs of one pg-boss queue that are not finished, across every process. */
export interface QueueStats {
  /** The queue (job name). */
  readonly queue: string;
  /** Jobs waiting for their first attempt (some may be scheduled for later). */
  readonly created: number;
  /** Jobs waiting for a retry after a failed attempt. */
  readonly retry: number;
  /** Jobs a worker holds now. */
  readonly active: number;
  /** Seconds the longest-waiting due job has waited since it became due; 0 when none waits. */
  readonly oldestWaitSeconds: number;
}

/**
 * Every queue with its unfinished jobs by state. pg-boss 10 keeps one partition of its job table per
 * queue and moves finished jobs to the archive within hours, so this reads small tables; waiting
 * jobs come from its index on (name, start_after) for states below active.
 */
export async function readQueueStats(sql: Sql, schema: string): Promise<QueueStats[]> {
  const rows = await sql<
    { queue: string; created: number; retry: number; active: number; oldestWaitSeconds: number }[]
  >`
    select q.name as queue,
      count(j.id) filter (where j.state = 'created')::int as created,
      count(j.id) filter (where j.state = 'retry')::int as retry,
      count(j.id) filter (where j.state = 'active')::int as active,
      coalesce(extract(epoch from now() - min(j.start_after)
        filter (where j.state < 'active' and j.start_after <= now())), 0)::float8 as "oldestWaitSeconds"
    from ${sql(schema)}.queue q
    left join ${sql(schema)}.job j on j.name = q.name and j.state < 'completed'
    group by q.name
    order by q.name`;
  return rows;
}
