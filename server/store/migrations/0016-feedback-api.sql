-- Feedback as the feedback API serves it: besides key, score, value and comment (0006), the
-- correction, who gave it (feedback_source), the run's project when the creator named it, and when it
-- last changed. runs.feedback_stats stays the aggregate of these rows, recomputed in the transaction
-- of every create, update and delete.
alter table run_feedback
  add column correction jsonb,
  add column feedback_source jsonb,
  add column session_id uuid,
  add column modified_at timestamptz not null default now();

-- Lists page newest first within a workspace.
create index run_feedback_created_idx on run_feedback (workspace_id, created_at desc, id desc);
