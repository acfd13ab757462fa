import { describe, expect, it } from "vitest";
import type { RunColumn, RunRow } from "../../store/tracing/run-query-store.js";
import { selectedV2Fields } from "./v2-run-fields.js";
import { v2RowColumns, v2RunEncoder, v2RunMessage } from "./v2-run-message.js";

/** A run with a value in every column, so every v2 field has something to show. */
const FULL: RunRow = {
  workspace_id: "0190a1b2-0000-7000-8000-000000000001",
  id: "0190a1b2-0000-7000-8000-000000000002",
  session_id: "0190a1b2-0000-7000-8000-000000000003",
  trace_id: "0190a1b2-0000-7000-8000-000000000004",
  parent_run_id: "0190a1b2-0000-7000-8000-000000000004",
  parent_run_ids: ["0190a1b2-0000-7000-8000-000000000004"],
  reference_example_id: "0190a1b2-0000-7000-8000-000000000005",
  name: "ChatModel",
  run_type: "llm",
  start_time: "2026-11-26T10:00:00.123456Z",
  end_time: "2026-11-26T10:00:02.000001Z",
  status: "success",
  is_root: false,
  dotted_order: "20261126T100000123456Z0190a1b2-0000-7000-8000-000000000004",
  trace_tier: "longlived",
  error: "boom",
  tags: ["a", "b"],
  total_tokens: "12",
  prompt_tokens: "7",
  completion_tokens: "5",
  total_cost: "0.00012",
  prompt_cost: "0.00007",
  completion_cost: "0.00005",
  first_token_time: "2026-11-26T10:00:01.5Z",
  received_at: "2026-11-26T10:00:03.000000Z",
  thread_id: "conv-1",
  inputs: { q: "hi" },
  outputs: { a: "hello" },
  extra: { metadata: { customer: "acme" }, runtime: { sdk: "js" } },
  events: [{ name: "new_token" }],
  serialized: { name: "ChatModel" },
  feedback_stats: { correctness: { n: 1, avg: 1 } },
};

/** A pending run with every nullable column null. */
const SPARSE: RunRow = {
  ...FULL,
  parent_run_id: null,
  reference_example_id: null,
  end_time: null,
  trace_tier: null,
  error: null,
  total_tokens: null,
  prompt_tokens: null,
  completion_tokens: null,
  total_cost: null,
  prompt_cost: null,
  completion_cost: null,
  first_token_time: null,
  thread_id: null,
  inputs: null,
  outputs: null,
  extra: null,
  events: null,
  serialized: null,
  feedback_stats: null,
};

/** Every select value agentplane fills. */
const FILLED_SELECTS = [
  ...new Set(
    Object.keys(FULL)
      .concat(["project_id", "metadata", "manifest", "latency_seconds", "app_path", "is_in_dataset"])
      .map((name) => name.toUpperCase()),
  ),
].filter((name) => {
  try {
    return selectedV2Fields([name]).size === 1;
  } catch {
    return false;
  }
});

/** `row` with only `columns`, as a query with `RunQuery.columns` returns it (id and start_time kept). */
function rowWith(row: RunRow, columns: ReadonlySet<RunColumn>): RunRow {
  const keep = new Set<string>([...columns, "id", "start_time"]);
  return Object.fromEntries(Object.entries(row).filter(([name]) => keep.has(name))) as unknown as RunRow;
}

describe("v2 run messages", () => {
  it("covers the fields this test selects", () => {
    expect(FILLED_SELECTS.length).toBe(32);
  });

  it.each(FILLED_SELECTS)("%s alone reads only the columns v2RowColumns names", (select) => {
    const fields = selectedV2Fields([select]);
    const fromFull = v2RunMessage(FULL, fields);
    expect(Object.keys(fromFull)).toHaveLength(1);
    expect(v2RunMessage(rowWith(FULL, v2RowColumns(fields)), fields)).toEqual(fromFull);
    // A column left out reads as undefined, which a null check would take for a value.
    expect(v2RunMessage(rowWith(SPARSE, v2RowColumns(fields)), fields)).toEqual(v2RunMessage(SPARSE, fields));
  });

  it("encodes every row of a page the same as one at a time", () => {
    const fields = selectedV2Fields(FILLED_SELECTS);
    const other: RunRow = {
      ...FULL,
      id: "0190a1b2-0000-7000-8000-000000000009",
      end_time: null,
      error: null,
    };
    const encode = v2RunEncoder(fields);
    expect([FULL, other].map(encode)).toEqual([v2RunMessage(FULL, fields), v2RunMessage(other, fields)]);
    expect(encode(other)).not.toHaveProperty("endTime");
    expect(encode(other)).not.toHaveProperty("latencySeconds");
    expect(encode(FULL)).toMatchObject({
      runType: "LLM",
      status: "SUCCESS",
      totalTokens: 12,
      totalCost: 0.00012,
    });
  });
});
