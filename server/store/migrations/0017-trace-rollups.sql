-- Rollups onto the root: a trace's root run shows the totals of its whole trace (tokens, costs, the
-- earliest first_token_time), as LangSmith shows them. The root's own values, as its post and patches
-- sent them, move to the own_* columns (set on root runs only); its total_tokens, ..., first_token_time
-- hold the sum over the trace (its own values plus every descendant's), recomputed by the ingest
-- transaction of every batch that touches the trace, whichever order posts and patches arrive in.
alter table runs
  add column own_total_tokens bigint,
  add column own_prompt_tokens bigint,
  add column own_completion_tokens bigint,
  add column own_total_cost numeric,
  add column own_prompt_cost numeric,
  add column own_completion_cost numeric,
  add column own_first_token_time timestamptz;

update runs set
  own_total_tokens = total_tokens,
  own_prompt_tokens = prompt_tokens,
  own_completion_tokens = completion_tokens,
  own_total_cost = total_cost,
  own_prompt_cost = prompt_cost,
  own_completion_cost = completion_cost,
  own_first_token_time = first_token_time
where is_root;

with totals as (
  select workspace_id, trace_id,
    sum(case when is_root then own_total_tokens else total_tokens end) as total_tokens,
    sum(case when is_root then own_prompt_tokens else prompt_tokens end) as prompt_tokens,
    sum(case when is_root then own_completion_tokens else completion_tokens end) as completion_tokens,
    sum(case when is_root then own_total_cost else total_cost end) as total_cost,
    sum(case when is_root then own_prompt_cost else prompt_cost end) as prompt_cost,
    sum(case when is_root then own_completion_cost else completion_cost end) as completion_cost,
    min(case when is_root then own_first_token_time else first_token_time end) as first_token_time
  from runs group by workspace_id, trace_id
)
update runs set
  total_tokens = totals.total_tokens,
  prompt_tokens = totals.prompt_tokens,
  completion_tokens = totals.completion_tokens,
  total_cost = totals.total_cost,
  prompt_cost = totals.prompt_cost,
  completion_cost = totals.completion_cost,
  first_token_time = totals.first_token_time
from totals
where runs.workspace_id = totals.workspace_id and runs.id = totals.trace_id and runs.is_root;
