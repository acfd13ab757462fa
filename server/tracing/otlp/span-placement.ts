/**
 * The OTLP half of an ingest transaction: a batch's spans, and the spans of the same traces that
 * waited for a parent, placed in their traces and validated as runs for the run writes of the same
 * transaction (ingest-service.ts); spans still without a parent are stored to wait, and waiting
 * spans that found theirs are deleted.
 *
 * In two steps, so that a batch costs the round trips of any other: what the batch places by
 * itself (its roots and the spans under them, all of a trace's spans when it is sent whole) is
 * written with the batch's first statements, behind the trace lock and the reads of waiting spans
 * and stored parents, which go out in the same round trip; the rest (spans under a parent that is
 * stored or waiting, spans naming a project by id) is placed once those reads are answered, and
 * written with the batch's last statements.
 */
import { ConnectError } from "@connectrpc/connect";
import { LOCK_SEED, lockIds } from "../../store/advisory-locks.js";
import {
  deletePendingSpans,
  type PendingSender,
  type PendingSpan,
  pendingSpansOfTraces,
  type StoredPosition,
  savePendingSpans,
  storedPositions,
} from "../../store/tracing/otel-pending-store.js";
import { existingProjectIds } from "../../store/tracing/project-store.js";
import type { JsonObject, NormalizedRun } from "../../store/tracing/trace-rows.js";
import type { WorkspaceBound } from "../../store/tracing/workspace-scope.js";
import { normalizeRun, type RunInput } from "../run-normalizer.js";
import type { SpanDraft } from "./span-draft.js";
import { positionSpans } from "./span-positions.js";

/** A batch's spans, placed as far as the batch alone places them (see the module comment). */
export interface SpanPlacement {
  /** Runs the batch places by itself: written first. */
  readonly posts: NormalizedRun[];
  /**
   * Places the rest once the reads sent with the batch's first statements are answered: the runs
   * to write with its last statements, and the writes of waiting spans (started, in order, when
   * called: call it where they belong in the transaction's pipeline).
   */
  rest(): Promise<PlacedRest>;
  /** Spans of the batch stored to wait for their parent; known once {@link rest} settled. */
  waiting(): number;
  /** Spans of the batch refused, with why; complete once {@link rest} settled. */
  readonly rejected: { runId: string; reason: string }[];
}

/** What {@link SpanPlacement.rest} settles. */
export interface PlacedRest {
  posts: NormalizedRun[];
  /** Deleting the waiting spans that became runs, saving the batch's spans that wait. */
  writes(): Promise<unknown>[];
}

/** 32 hex digits as a UUID. */
function uuidOfHex(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Places `drafts` (see the module comment), sent by `sender` (recorded with the spans that wait).
 * Sends its statements on `tx` when called, without waiting for them: the batch's writes follow.
 */
export function placeSpans(
  tx: WorkspaceBound,
  workspaceId: string,
  drafts: readonly SpanDraft[],
  sender: PendingSender,
): SpanPlacement {
  const batch = new Map<string, SpanDraft>();
  for (const draft of drafts) batch.set(draft.runId, draft);
  const traceIds = [...new Set([...batch.values()].map((d) => uuidOfHex(d.otelTraceId)))];
  const outsideParents = [
    ...new Set(
      [...batch.values()]
        .map((d) => d.parentRunId)
        .filter((id): id is string => id !== null && !batch.has(id)),
    ),
  ];
  const projectIds = [
    ...new Set(
      [...batch.values()].flatMap(({ run }) =>
        typeof run.session_id === "string" ? [run.session_id.toLowerCase()] : [],
      ),
    ),
  ];
  // Sent together, the lock first: Postgres runs a connection's statements in order, so a
  // concurrent batch of the same trace waits on the lock until this one has stored its spans or its
  // waiting ones, before either reads the waiting spans.
  const locked = lockIds(tx, workspaceId, traceIds, LOCK_SEED.otelTrace);
  const pending = pendingSpansOfTraces(tx, workspaceId, traceIds);
  // The parents of waiting spans are not stored (the batch that stores a parent places its
  // waiting children): only the batch's own parents from outside it are looked up.
  const stored = storedPositions(tx, workspaceId, outsideParents);
  const known = existingProjectIds(tx, workspaceId, projectIds);
  const reads = Promise.all([locked, pending, stored, known]);
  // Awaited in rest(); this handler only keeps a failure (which fails the batch's writes as well,
  // in the aborted transaction) from being reported as unhandled before that.
  reads.catch(() => undefined);

  const rejected: { runId: string; reason: string }[] = [];
  const validation = validator(rejected, (runId) => batch.has(runId));

  // What the batch places by itself; spans that name a project by id wait for its check.
  const first = positionSpans([...batch.values()], new Map());
  const posts: NormalizedRun[] = [];
  const placedPositions = new Map<string, StoredPosition>();
  const byProjectId: { draft: SpanDraft; run: RunInput }[] = [];
  for (const placed of first.placed) {
    const { draft, run } = placed;
    placedPositions.set(draft.runId, {
      id: draft.runId,
      traceId: run.trace_id as string,
      dottedOrder: run.dotted_order as string,
    });
    if (typeof run.session_id === "string") {
      byProjectId.push(placed);
      continue;
    }
    const post = validation.validate(run, draft.runId);
    if (post) posts.push(post);
  }
  let waitingCount = 0;

  const rest = async (): Promise<PlacedRest> => {
    const [, waitingBefore, storedParents, knownProjects] = await reads;
    const parents = new Map(placedPositions);
    for (const position of storedParents) parents.set(position.id, position);
    // Waiting spans the batch sends again are the batch's; the others are placed if they can be.
    const settled: string[] = [];
    const candidates: SpanDraft[] = [...first.waiting];
    for (const waiting of waitingBefore) {
      settled.push(waiting.runId);
      if (!batch.has(waiting.runId)) candidates.push(draftOfPending(waiting));
    }
    const second = positionSpans(candidates, parents);
    // Waiting spans may name projects the batch's own spans do not: those are checked now.
    const known = await withProjectsChecked(tx, workspaceId, second.placed, knownProjects, projectIds);
    const later = validatedInProjects([...byProjectId, ...second.placed], known, validation);
    // A waiting span that is not placed now keeps waiting, where it is: only settled ones go.
    const stillWaiting = new Set(second.waiting.map((d) => d.runId));
    const gone = settled.filter((id) => !stillWaiting.has(id) || batch.has(id));
    const newlyWaiting = second.waiting.filter((d) => batch.has(d.runId));
    waitingCount = newlyWaiting.length;
    return {
      posts: later,
      writes: () => [
        deletePendingSpans(tx, workspaceId, gone),
        savePendingSpans(tx, workspaceId, sender, newlyWaiting.map(toPending)),
      ],
    };
  };
  return { posts, rest, waiting: () => waitingCount, rejected };
}

/**
 * The waiting spans of `otelTraceIds` whose parent never came (jobs/otel-orphan-sweep-job.ts), as
 * runs: under their parent where it is stored after all (sent another way), else each at the top of
 * a trace of its own, with its missing parent's run id kept in `extra.otel.missing_parent_run_id`
 * (its span id stays in `extra.otel.parent_span_id`); the spans under them follow. Sends the trace
 * lock and the read of the waiting spans when called; places them in rest().
 */
export function placeOrphans(
  tx: WorkspaceBound,
  workspaceId: string,
  otelTraceIds: readonly string[],
): SpanPlacement {
  const locked = lockIds(tx, workspaceId, otelTraceIds, LOCK_SEED.otelTrace);
  const pending = pendingSpansOfTraces(tx, workspaceId, otelTraceIds);
  const reads = Promise.all([locked, pending]);
  reads.catch(() => undefined);
  const rejected: { runId: string; reason: string }[] = [];
  const validation = validator(rejected, () => true);
  const rest = async (): Promise<PlacedRest> => {
    const [, waiting] = await reads;
    const drafts = waiting.map(draftOfPending);
    const ids = new Set(drafts.map((d) => d.runId));
    const outside = [
      ...new Set(
        drafts.flatMap((d) => (d.parentRunId !== null && !ids.has(d.parentRunId) ? [d.parentRunId] : [])),
      ),
    ];
    const positions = new Map(
      (await storedPositions(tx, workspaceId, outside)).map((p) => [p.id, p] as const),
    );
    let todo = drafts.map((d) =>
      d.parentRunId !== null && !ids.has(d.parentRunId) && !positions.has(d.parentRunId) ? orphanRoot(d) : d,
    );
    const placed: { draft: SpanDraft; run: RunInput }[] = [];
    for (;;) {
      const round = positionSpans(todo, positions);
      for (const p of round.placed) {
        placed.push(p);
        positions.set(p.draft.runId, {
          id: p.draft.runId,
          traceId: p.run.trace_id as string,
          dottedOrder: p.run.dotted_order as string,
        });
      }
      const [first, ...others] = round.waiting;
      if (first === undefined) break;
      // Only spans whose parents wait on one another in a cycle are left: one starts a trace.
      todo = [orphanRoot(first), ...others];
    }
    const known = await withProjectsChecked(tx, workspaceId, placed, new Set(), []);
    return {
      posts: validatedInProjects(placed, known, validation),
      writes: () => [
        deletePendingSpans(
          tx,
          workspaceId,
          waiting.map((w) => w.runId),
        ),
      ],
    };
  };
  return { posts: [], rest, waiting: () => 0, rejected };
}

/** A waiting span as the top of a trace of its own: its missing parent's run id kept in extra. */
function orphanRoot(draft: SpanDraft): SpanDraft {
  const extra = (draft.run.extra ?? {}) as JsonObject;
  const otel = (typeof extra.otel === "object" && extra.otel !== null ? extra.otel : {}) as JsonObject;
  return {
    ...draft,
    parentRunId: null,
    run: { ...draft.run, extra: { ...extra, otel: { ...otel, missing_parent_run_id: draft.parentRunId } } },
  };
}

/** How placed runs are validated as posts, and refused with why. */
interface Validation {
  /** The run as a post, or undefined when it is refused (recorded so). */
  validate(run: RunInput, runId: string): NormalizedRun | undefined;
  refuse(runId: string, reason: string): void;
}

/** Validation recording refusals in `rejected` for the runs that are `reported`. */
function validator(
  rejected: { runId: string; reason: string }[],
  reported: (runId: string) => boolean,
): Validation {
  const now = new Date();
  const refuse = (runId: string, reason: string) => {
    if (reported(runId)) rejected.push({ runId, reason });
  };
  return {
    refuse,
    validate(run, runId) {
      try {
        return normalizeRun(run, "post", now);
      } catch (error) {
        if (!(error instanceof ConnectError)) throw error;
        refuse(runId, error.rawMessage);
        return undefined;
      }
    },
  };
}

/**
 * `known` (the project ids found among `checked`) with the project ids that the runs of `placed`
 * name and that were not checked yet: those are looked up now (one more round trip, when any).
 */
async function withProjectsChecked(
  tx: WorkspaceBound,
  workspaceId: string,
  placed: readonly { run: RunInput }[],
  known: ReadonlySet<string>,
  checked: readonly string[],
): Promise<ReadonlySet<string>> {
  const done = new Set(checked);
  const unchecked = [
    ...new Set(
      placed.flatMap(({ run }) => {
        const id = typeof run.session_id === "string" ? run.session_id.toLowerCase() : undefined;
        return id === undefined || done.has(id) ? [] : [id];
      }),
    ),
  ];
  if (unchecked.length === 0) return known;
  return new Set([...known, ...(await existingProjectIds(tx, workspaceId, unchecked))]);
}

/**
 * The placed runs that validate and whose project (when named by id) is one of `known`; the others
 * are refused.
 */
function validatedInProjects(
  placed: readonly { draft: SpanDraft; run: RunInput }[],
  known: ReadonlySet<string>,
  validation: Validation,
): NormalizedRun[] {
  const posts: NormalizedRun[] = [];
  for (const { draft, run } of placed) {
    if (typeof run.session_id === "string" && !known.has(run.session_id.toLowerCase())) {
      validation.refuse(
        draft.runId,
        `tracing project ${run.session_id} (langsmith.trace.session_id) not found in this workspace`,
      );
      continue;
    }
    const post = validation.validate(run, draft.runId);
    if (post) posts.push(post);
  }
  return posts;
}

function toPending(draft: SpanDraft): PendingSpan {
  return {
    runId: draft.runId,
    parentRunId: draft.parentRunId as string,
    otelTraceId: uuidOfHex(draft.otelTraceId),
    run: draft.run as JsonObject,
  };
}

function draftOfPending(pending: PendingSpan): SpanDraft {
  return {
    otelTraceId: pending.otelTraceId.replaceAll("-", ""),
    runId: pending.runId,
    parentRunId: pending.parentRunId,
    run: pending.run as RunInput & { id: string; start_time: string },
  };
}
