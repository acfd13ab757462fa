/**
 * `strict_resume` (SDK 1.15's `strictResume`): a resume whose answers name interrupts that are not
 * waiting is refused before the graph runs, instead of running and leaving them unanswered. The run
 * fails with `UnknownInterruptError`, whose refusal says which ids were unknown and which are
 * pending, and the thread stays as it was (still waiting on its interrupts).
 */
import { isObject } from "./plain-json.js";
import type { RunKwargs } from "./run-kwargs.js";
import type { ThreadStateAfterRun } from "./run-thread-state.js";

/** The refusal of a strict resume, as the run's error and the protocol's `failed` lifecycle carry it. */
export interface ResumeRefusal {
  reason: "unknown_interrupt";
  interrupt_ids: string[];
  pending_ids: string[];
}

/** Thrown by an attempt whose strict resume is refused; the worker ends the run with it. */
export class ResumeRefusedError extends Error {
  override readonly name = "UnknownInterruptError";

  constructor(readonly refusal: ResumeRefusal) {
    super(
      refusal.pending_ids.length === 0
        ? `the thread is not waiting for input: no interrupt is pending (answered ${refusal.interrupt_ids.join(", ") || "nothing"})`
        : `interrupt ${refusal.interrupt_ids.join(", ")} is not waiting; pending: ${refusal.pending_ids.join(", ")}`,
    );
  }
}

/** The interrupt ids a run answers: a protocol resume's, or the keys of a `command.resume` map. */
export function answeredInterruptIds(kwargs: RunKwargs): string[] {
  if (kwargs.protocol_answers) return kwargs.protocol_answers;
  const resume = kwargs.command?.resume;
  return typeof resume === "object" && resume !== null && !Array.isArray(resume) ? Object.keys(resume) : [];
}

/** The ids of the interrupts a thread waits on. */
export function pendingInterruptIds(state: ThreadStateAfterRun): string[] {
  const ids: string[] = [];
  for (const list of Object.values(state.interrupts))
    if (Array.isArray(list))
      for (const entry of list) if (isObject(entry) && typeof entry.id === "string") ids.push(entry.id);
  return ids;
}

/**
 * The refusal of a strict resume against the thread's state before it runs, or undefined when it
 * may run: every interrupt it answers by id is pending (a resume by a bare value needs one pending).
 */
export function strictResumeRefusal(
  kwargs: RunKwargs,
  state: ThreadStateAfterRun,
): ResumeRefusal | undefined {
  if (!kwargs.strict_resume || !kwargs.command || kwargs.command.resume === undefined) return undefined;
  const pending = pendingInterruptIds(state);
  const answered = answeredInterruptIds(kwargs);
  const unknown = answered.filter((id) => !pending.includes(id));
  if (unknown.length === 0 && pending.length > 0) return undefined;
  return { reason: "unknown_interrupt", interrupt_ids: unknown, pending_ids: pending };
}
