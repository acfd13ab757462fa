-- Pages of a project's runs in keyset order: run queries read (start_time, id) newest first, with
-- the cursor as `(start_time, id) < (...)`; exports read it oldest first, with `> (...)`. The index
-- of 0006 ends at start_time, so a page with a selective filter (a metadata pair, say) could not stop
-- early in order: Postgres read every run of the window and sorted them (seconds for a week of a 1M-run
-- project, bench:query). With id in the index, both directions are one ordered scan that stops at
-- the page's end, whatever page the cursor names. It serves every query the old index served, which
-- is dropped so ingest maintains one index, not two.
create index runs_session_start_id_idx on runs (workspace_id, session_id, start_time desc, id desc);
drop index runs_session_start_idx;
