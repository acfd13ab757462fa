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
  type PendingSpan,
  pendingSpansOfTraces,
  type StoredPosition,
  savePendingSpans,
  storedPositions,
} from "../../store/otel-pending-store.js";
import { existingProjectIds } from "../../store/project-store.js";
import type { JsonObject, NormalizedRun } from "../../store/trace-rows.js";
import type { WorkspaceBound } from "../../store/workspace-scope.js";
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
 * Places `drafts` (see the module comment). Sends its statements on `tx` when called, without
 * waiting for them: the batch's writes follow them.
 */
export function placeSpans(
  tx: WorkspaceBound,
  workspaceId: string,
  drafts: readonly SpanDraft[],
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
  const now = new Date();
  /** The run of a placed span, or undefined when it is refused (and recorded so). */
  const validated = (run: RunInput, runId: string): NormalizedRun | undefined => {
    try {
      return normalizeRun(run, "post", now);
    } catch (error) {
      if (!(error instanceof ConnectError)) throw error;
      if (batch.has(runId)) rejected.push({ runId, reason: error.rawMessage });
      return undefined;
    }
  };

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
    const post = validated(run, draft.runId);
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
    const later: NormalizedRun[] = [];
    for (const { draft, run } of [...byProjectId, ...second.placed]) {
      if (typeof run.session_id === "string" && !knownProjects.has(run.session_id.toLowerCase())) {
        if (batch.has(draft.runId))
          rejected.push({
            runId: draft.runId,
            reason: `tracing project ${run.session_id} (langsmith.trace.session_id) not found in this workspace`,
          });
        continue;
      }
      const post = validated(run, draft.runId);
      if (post) later.push(post);
    }
    // A waiting span that is not placed now keeps waiting, where it is: only settled ones go.
    const stillWaiting = new Set(second.waiting.map((d) => d.runId));
    const gone = settled.filter((id) => !stillWaiting.has(id) || batch.has(id));
    const newlyWaiting = second.waiting.filter((d) => batch.has(d.runId));
    waitingCount = newlyWaiting.length;
    return {
      posts: later,
      writes: () => [
        deletePendingSpans(tx, workspaceId, gone),
        savePendingSpans(tx, workspaceId, newlyWaiting.map(toPending)),
      ],
    };
  };
  return { posts, rest, waiting: () => waitingCount, rejected };
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
