/**
 * The backlog of a process that executes runs: runs it created itself that may start now but
 * found every slot busy wait here for a slot, rather than going through the queue (a job written
 * with the run, a wake-up, a fetch and a completion for each), when slots free up soon enough.
 *
 * Invariants:
 * - a backlog run is pending in Postgres like any other, only without a job: it is claimed under
 *   its thread queue's lock with the conditions of any claim (run-slots.ts serves it in turn with
 *   the queue's jobs waiting for a slot), so it starts only when it heads its thread's queue;
 * - at most `capacity` runs wait here (a few per slot), so a busy process keeps no more than that
 *   from idle workers elsewhere, and none of them for longer than {@link BACKLOG_WAIT_MS};
 * - a run that has not got a slot within {@link BACKLOG_WAIT_MS} gets its job (any worker of the
 *   installation may then take it), as does every run still waiting when the process stops or
 *   when its claim fails; a process that dies leaves its backlog to the maintenance pass, which
 *   dispatches pending runs nobody dispatched (agent-run-maintenance.ts).
 */
import type { Logger } from "../logger.js";
import type { AgentRunPayload } from "./agent-run-dispatch.js";

/**
 * How long a run waits here for a slot before it goes to the queue: a slot of a process busy with
 * short runs frees up within milliseconds; a run that would wait longer is better taken by any
 * idle worker, which the queue reaches.
 */
export const BACKLOG_WAIT_MS = 1_000;

/** A place in the backlog, reserved before the run's creation commits. */
export interface BacklogPlace {
  /** The run's creation committed: it waits here for a slot (see the invariants above). */
  enqueue(run: AgentRunPayload): void;
  /** The creation did not commit: gives the place back. */
  release(): void;
}

/** The backlog of a process. */
export interface RunBacklog {
  /** A place for a run about to be created, or undefined when the backlog is full. */
  reserve(): BacklogPlace | undefined;
  /** Runs waiting (or about to) now. */
  size(): number;
}

/** What the backlog runs its runs with. */
export interface BacklogDeps {
  /** Places: a few per slot of the process. */
  capacity: number;
  /**
   * Waits for a slot and claims the run in it (as a job's handler does); `closed` is called when
   * the slots close before one was free. Resolves once the run was claimed or found not claimable.
   */
  start(run: AgentRunPayload, closed: () => Promise<void>): Promise<void>;
  /** Writes the run's job, for any worker to take. */
  dispatch(run: AgentRunPayload): Promise<void>;
  log: Logger;
}

/** Creates a backlog; see the invariants above. */
export function createRunBacklog(deps: BacklogDeps): RunBacklog {
  let taken = 0;

  const enqueue = (run: AgentRunPayload): void => {
    let settled = false;
    /** The run leaves the backlog: it got a slot, or goes to the queue now. */
    const leave = (): boolean => {
      if (settled) return false;
      settled = true;
      taken -= 1;
      clearTimeout(timer);
      return true;
    };
    const toQueue = async (): Promise<void> => {
      if (!leave()) return;
      try {
        await deps.dispatch(run);
      } catch (error) {
        deps.log.warn("a run waiting for a slot could not be queued; the maintenance pass dispatches it", {
          runId: run.runId,
          error,
        });
      }
    };
    const timer = setTimeout(() => void toQueue(), BACKLOG_WAIT_MS);
    deps.start(run, toQueue).then(
      () => leave(),
      // The claim failed: the run is still pending, and only a job brings it to a worker.
      (error: unknown) => {
        deps.log.warn("a run waiting for a slot could not be claimed; it goes to the queue", {
          runId: run.runId,
          error,
        });
        void toQueue();
      },
    );
  };

  return {
    reserve() {
      if (taken >= deps.capacity) return undefined;
      taken += 1;
      let used = false;
      const once = () => {
        if (used) throw new Error("a backlog place is used once");
        used = true;
      };
      return {
        enqueue(run) {
          once();
          enqueue(run);
        },
        release() {
          once();
          taken -= 1;
        },
      };
    },
    size: () => taken,
  };
}
