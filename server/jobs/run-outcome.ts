/**
 * What an attempt's execution comes to: the one place that turns how the execution finished (its
 * result or the error it threw) and why it was stopped (run-lease.ts) into what happens to the run.
 *
 * Invariant: the stop reason decides, not the error. An execution stopped on purpose throws an
 * abort error, which says nothing; the reason says whether the run is ended (interrupted, or failed
 * by its timeout), rolled back, handed back to the queue, or left to the attempt that took it over.
 * Only an execution that threw without being stopped ends the run with the error it threw.
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { toPlainJson } from "../runtime/plain-json.js";
import { errorData } from "../runtime/run-stream-modes.js";
import type { RunStatus } from "../store/agents/agent-run-store.js";
import type { StopReason } from "./run-lease.js";

/** An error as a failed run shows it: the `error` event's data, and its output's `__error__`. */
export type RunFailure = {
  error: string;
  message: string;
};

/** What happens to the run after an attempt's execution. */
export type AttemptOutcome =
  | {
      kind: "end";
      status: RunStatus;
      /**
       * The run's output: the last root `values` chunk, `{__error__}` of a failure; undefined when
       * the run produced neither (then the thread's values are its output).
       */
      output: JsonValue | undefined;
      failure: RunFailure | undefined;
      /** Whether the failure is the graph's own (logged), not one of a stop. */
      unexpected: boolean;
    }
  /** A rollback cancel: the run goes, with what it wrote. */
  | { kind: "roll-back" }
  /** A stopping worker: the run is pending again, for any worker to resume. */
  | { kind: "hand-back" }
  /** The lease is gone: another attempt holds the run, and this one writes nothing more. */
  | { kind: "abandon" };

/** How an execution finished. */
export type ExecutionResult =
  | { ok: true; output: { value: unknown } | undefined }
  | { ok: false; error: unknown };

/** The outcome of an execution that finished as `result`, stopped for `reason` (if it was). */
export function classifyOutcome(
  result: ExecutionResult,
  reason: StopReason | undefined,
  timeoutSeconds: number,
): AttemptOutcome {
  if (result.ok) {
    const value = result.output?.value;
    return {
      kind: "end",
      status: "success",
      output: value === undefined ? undefined : toPlainJson(value),
      failure: undefined,
      unexpected: false,
    };
  }
  switch (reason?.kind) {
    case "lease-lost":
      return { kind: "abandon" };
    case "shutdown":
      return { kind: "hand-back" };
    case "cancel":
      if (reason.action === "rollback") return { kind: "roll-back" };
      return { kind: "end", status: "interrupted", output: undefined, failure: undefined, unexpected: false };
    case "orphaned":
      return { kind: "end", status: "interrupted", output: undefined, failure: undefined, unexpected: false };
    case "timeout":
      return failed(
        { error: "TimeoutError", message: `the run exceeded its ${timeoutSeconds} s timeout` },
        false,
      );
    case undefined:
      return failed(errorData(result.error), true);
  }
}

function failed(failure: RunFailure, unexpected: boolean): AttemptOutcome {
  return { kind: "end", status: "error", output: { __error__: { ...failure } }, failure, unexpected };
}
