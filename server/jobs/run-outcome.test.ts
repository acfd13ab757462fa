import { describe, expect, it } from "vitest";
import { classifyOutcome } from "./run-outcome.js";

const aborted = { ok: false as const, error: new DOMException("aborted", "AbortError") };

describe("classifyOutcome", () => {
  it("ends a finished execution with its last values as output", () => {
    expect(classifyOutcome({ ok: true, output: { value: { reply: "ok" } } }, undefined, 60)).toEqual({
      kind: "end",
      status: "success",
      output: { reply: "ok" },
      failure: undefined,
      unexpected: false,
    });
    expect(classifyOutcome({ ok: true, output: undefined }, undefined, 60)).toMatchObject({
      kind: "end",
      output: undefined,
    });
  });

  it("lets the stop reason decide, whatever the execution threw", () => {
    expect(classifyOutcome(aborted, { kind: "lease-lost" }, 60)).toEqual({ kind: "abandon" });
    expect(classifyOutcome(aborted, { kind: "shutdown" }, 60)).toEqual({ kind: "hand-back" });
    expect(classifyOutcome(aborted, { kind: "cancel", action: "rollback" }, 60)).toEqual({
      kind: "roll-back",
    });
    for (const reason of [{ kind: "cancel", action: "interrupt" }, { kind: "orphaned" }] as const)
      expect(classifyOutcome(aborted, reason, 60)).toMatchObject({
        kind: "end",
        status: "interrupted",
        output: undefined,
        failure: undefined,
      });
    expect(classifyOutcome(aborted, { kind: "timeout" }, 60)).toEqual({
      kind: "end",
      status: "error",
      output: { __error__: { error: "TimeoutError", message: "the run exceeded its 60 s timeout" } },
      failure: { error: "TimeoutError", message: "the run exceeded its 60 s timeout" },
      unexpected: false,
    });
  });

  it("ends an execution that threw by itself with its error, marked unexpected", () => {
    const outcome = classifyOutcome({ ok: false, error: new RangeError("too far") }, undefined, 60);
    expect(outcome).toEqual({
      kind: "end",
      status: "error",
      output: { __error__: { error: "RangeError", message: "too far" } },
      failure: { error: "RangeError", message: "too far" },
      unexpected: true,
    });
  });
});
