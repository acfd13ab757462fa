/**
 * The OTLP half of an ingest transaction: a batch's spans, and the spans of the same traces that
 * waited for a parent, placed in their traces and validated as runs, ready for the run writes that
 * follow in the same transaction (ingest-service.ts); spans still without a parent are stored to
 * wait, and waiting spans that found theirs are deleted.
 */
import { ConnectError } from "@connectrpc/connect";
import { LOCK_SEED, lockIds } from "../../store/advisory-locks.js";
import {
  deletePendingSpans,
  type PendingSpan,
  pendingSpansOfTraces,
  savePendingSpans,
  storedPositions,
} from "../../store/otel-pending-store.js";
import { existingProjectIds } from "../../store/project-store.js";
import type { JsonObject, NormalizedRun } from "../../store/trace-rows.js";
import type { WorkspaceBound } from "../../store/workspace-scope.js";
import { normalizeRun, type RunInput } from "../run-normalizer.js";
import type { SpanDraft } from "./span-draft.js";
import { positionSpans } from "./span-positions.js";

/** What {@link placeSpans} settled. */
export interface PlacedSpans {
  posts: NormalizedRun[];
  /** Spans of the batch stored to wait for their parent. */
  waiting: number;
  /** Spans of the batch refused, with why. */
  rejected: { runId: string; reason: string }[];
}

/** 32 hex digits as a UUID. */
function uuidOfHex(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Places `drafts` (see the module comment). */
export async function placeSpans(
  tx: WorkspaceBound,
  workspaceId: string,
  drafts: readonly SpanDraft[],
): Promise<PlacedSpans> {
  const batch = new Map<string, SpanDraft>();
  for (const draft of drafts) batch.set(draft.runId, draft);
  const traceIds = [...new Set([...batch.values()].map((d) => uuidOfHex(d.otelTraceId)))];
  // Sent together, the lock first: Postgres runs a connection's statements in order, so a
  // concurrent batch of the same trace waits on the lock until this one has stored its spans or its
  // waiting ones, before either reads the waiting spans; one round trip for both.
  const [, waitingBefore] = await Promise.all([
    lockIds(tx, workspaceId, traceIds, LOCK_SEED.otelTrace),
    pendingSpansOfTraces(tx, workspaceId, traceIds),
  ]);
  const merged = new Map<string, SpanDraft>();
  const fromPending = new Set<string>();
  for (const pending of waitingBefore) {
    merged.set(pending.runId, draftOfPending(pending));
    fromPending.add(pending.runId);
  }
  for (const [id, draft] of batch) merged.set(id, draft);
  const missing = [...merged.values()]
    .map((d) => d.parentRunId)
    .filter((id): id is string => id !== null && !merged.has(id));
  const stored = new Map(
    (await storedPositions(tx, workspaceId, [...new Set(missing)])).map((p) => [p.id, p] as const),
  );
  const { placed, waiting } = positionSpans([...merged.values()], stored);

  const rejected: PlacedSpans["rejected"] = [];
  const refuse = (runId: string, reason: string) => {
    if (batch.has(runId)) rejected.push({ runId, reason });
  };
  const projectIds = [
    ...new Set(
      placed.flatMap(({ run }) => (typeof run.session_id === "string" ? [run.session_id.toLowerCase()] : [])),
    ),
  ];
  const knownProjects = await existingProjectIds(tx, workspaceId, projectIds);
  const posts: NormalizedRun[] = [];
  const now = new Date();
  for (const { draft, run } of placed) {
    if (typeof run.session_id === "string" && !knownProjects.has(run.session_id.toLowerCase())) {
      refuse(
        draft.runId,
        `tracing project ${run.session_id} (langsmith.trace.session_id) not found in this workspace`,
      );
      continue;
    }
    try {
      posts.push(normalizeRun(run, "post", now));
    } catch (error) {
      if (!(error instanceof ConnectError)) throw error;
      refuse(draft.runId, error.rawMessage);
    }
  }
  const settled = [...placed.map((p) => p.draft.runId)].filter((id) => fromPending.has(id));
  const newlyWaiting = waiting.filter((d) => batch.has(d.runId));
  await Promise.all([
    deletePendingSpans(tx, workspaceId, settled),
    savePendingSpans(tx, workspaceId, newlyWaiting.map(toPending)),
  ]);
  return { posts, waiting: newlyWaiting.length, rejected };
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
