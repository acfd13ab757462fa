/**
 * What keeps an attempt of a run alive and what stops it: its lease, renewed every quarter lease
 * by a heartbeat, its timeout, and the cancels notified for it.
 *
 * Invariants:
 * - an attempt stops for the first reason that reaches it, and only that one is kept
 *   ({@link AttemptStop.halt} ignores later ones): the reason, not the error the graph throws, is
 *   what decides the attempt's outcome (run-outcome.ts);
 * - the heartbeat, the timeout and the cancel subscription exist from {@link holdLease} until the
 *   release it returns, which the attempt calls once its execution is over, whatever the outcome;
 * - a heartbeat that finds the lease gone stops the attempt (`lease-lost`), so an attempt whose
 *   run was taken over by another worker stops writing; a heartbeat that fails is retried at the
 *   next tick (the lease outlives three of them).
 */
import type { Logger } from "../logger.js";
import type { RunEventBus } from "../runtime/run-event-bus.js";
import { type CancelAction, renewRunLease } from "../store/agents/agent-run-store.js";
import type { Sql } from "../store/db.js";

/** Why an attempt stopped before its graph ended. */
export type StopReason =
  | { kind: "cancel"; action: CancelAction }
  | { kind: "orphaned" }
  | { kind: "timeout" }
  | { kind: "lease-lost" }
  | { kind: "shutdown" };

/** The stop of one attempt: its signal (the graph's), and how to stop it. */
export interface AttemptStop {
  readonly signal: AbortSignal;
  /** Stops the attempt for `reason`, unless it already stopped. */
  halt(reason: StopReason): void;
  /** Why it stopped; undefined while it runs. */
  reason(): StopReason | undefined;
}

/** A new {@link AttemptStop}. */
export function createAttemptStop(): AttemptStop {
  const controller = new AbortController();
  let why: StopReason | undefined;
  return {
    signal: controller.signal,
    halt(reason) {
      if (why) return;
      why = reason;
      controller.abort(reason);
    },
    reason: () => why,
  };
}

/** What holding a lease needs. */
export interface LeaseDeps {
  sql: Sql;
  log: Logger;
  bus: RunEventBus;
  leaseSeconds: number;
  timeoutSeconds: number;
}

/** The cancel a NOTIFY on the run control channel asks for, as a stop reason. */
function cancelReason(action: string): StopReason {
  if (action === "orphaned") return { kind: "orphaned" };
  return { kind: "cancel", action: action === "rollback" ? "rollback" : "interrupt" };
}

/**
 * Holds the lease of an attempt of `runId` (token `leaseToken`) while it executes: renews it every
 * quarter lease, stops the attempt when a renewal finds the lease gone, a cancel asked or the run
 * orphaned, and when the run's timeout passes or a cancel is notified. Returns the release.
 */
export function holdLease(deps: LeaseDeps, runId: string, leaseToken: string, stop: AttemptStop): () => void {
  const unsubscribe = deps.bus.onCancel(runId, (action) => stop.halt(cancelReason(action)));
  const heartbeat = setInterval(
    () => {
      renewRunLease(deps.sql, runId, leaseToken, deps.leaseSeconds).then(
        (state) => {
          if (!state) stop.halt({ kind: "lease-lost" });
          else if (state.orphaned) stop.halt({ kind: "orphaned" });
          else if (state.cancelAction) stop.halt({ kind: "cancel", action: state.cancelAction });
        },
        (error: unknown) => deps.log.warn("run heartbeat failed", { runId, error }),
      );
    },
    (deps.leaseSeconds * 1000) / 4,
  );
  const timeout = setTimeout(() => stop.halt({ kind: "timeout" }), deps.timeoutSeconds * 1000);
  return () => {
    clearInterval(heartbeat);
    clearTimeout(timeout);
    unsubscribe();
  };
}
