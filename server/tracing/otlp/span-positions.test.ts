import { describe, expect, it } from "vitest";
import type { SpanDraft } from "./span-draft.js";
import { positionSpans } from "./span-positions.js";

function draft(id: string, parent: string | null, start: string): SpanDraft {
  return {
    otelTraceId: `${"0".repeat(31)}1`,
    runId: `00000000-0000-0000-0000-${id.padStart(12, "0")}`,
    parentRunId: parent === null ? null : `00000000-0000-0000-0000-${parent.padStart(12, "0")}`,
    run: { id, name: id, run_type: "chain", start_time: start },
  };
}

describe("positionSpans", () => {
  it("places children under parents sent in any order, and leaves spans without a parent waiting", () => {
    const { placed, waiting } = positionSpans(
      [
        draft("c", "b", "2026-01-01T00:00:00.000300Z"),
        draft("b", "a", "2026-01-01T00:00:00.000200Z"),
        draft("a", null, "2026-01-01T00:00:00.000100Z"),
        draft("x", "missing", "2026-01-01T00:00:00.000100Z"),
      ],
      new Map(),
    );
    expect(placed.map((p) => p.draft.run.name)).toEqual(["a", "b", "c"]);
    const c = placed[2]?.run;
    expect(c?.dotted_order).toBe(
      "20260101T000000000100Z00000000-0000-0000-0000-00000000000a.20260101T000000000200Z00000000-0000-0000-0000-00000000000b.20260101T000000000300Z00000000-0000-0000-0000-00000000000c",
    );
    expect(c?.trace_id).toBe("00000000-0000-0000-0000-00000000000a");
    expect(c?.parent_run_id).toBe("00000000-0000-0000-0000-00000000000b");
    expect(waiting.map((d) => d.run.name)).toEqual(["x"]);
  });

  it("places a span under a stored parent, never earlier in dotted_order than it, keeping its own start", () => {
    const parent = {
      id: "00000000-0000-0000-0000-00000000000a",
      traceId: "00000000-0000-0000-0000-00000000000a",
      dottedOrder: "20260101T000000000500Z00000000-0000-0000-0000-00000000000a",
    };
    const { placed } = positionSpans(
      [draft("b", "a", "2026-01-01T00:00:00.000400Z")],
      new Map([[parent.id, parent]]),
    );
    expect(placed[0]?.run.dotted_order).toBe(
      `${parent.dottedOrder}.20260101T000000000500Z00000000-0000-0000-0000-00000000000b`,
    );
    expect(placed[0]?.run.start_time).toBe("2026-01-01T00:00:00.000400Z");
  });
});
