-- Run times never go backwards (issue 27). The langsmith JS SDK sends a run's start_time with the
-- microseconds of its dotted_order, which are the run's execution order within the millisecond
-- (`…21.226002Z`), and its end_time as epoch milliseconds (`…21.226Z`): a run that ended within the
-- millisecond it started in was stored ending before it started, with a negative latency in the API,
-- in run stats and in bulk exports. The ingest now stores an end before the start as the start
-- (server/store/tracing/run-store.ts: an end within the start's millisecond is the same instant at the
-- client's precision); this fixes the rows stored before, and the check keeps every writer to it.
update runs set end_time = start_time where end_time < start_time;

alter table runs add constraint runs_end_not_before_start check (end_time >= start_time);
