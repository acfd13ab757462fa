-- Runs by project and start time, with the id as tie-breaker: bulk exports read a project's runs in
-- (start_time, id) order from a (start_time, id) position. With the id in the index that position is
-- an index condition and the order needs no sort, and an export splits a file's rows into chunks
-- from this index alone (an index-only scan). It replaces the (start_time desc) index: every query
-- that used that one can use this one, so writes keep one index, not two.
create index runs_session_start_id_idx on runs (workspace_id, session_id, start_time desc, id desc);
drop index runs_session_start_idx;
