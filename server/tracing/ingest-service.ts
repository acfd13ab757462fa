/**
 * Trace ingest as an in-process service: the REST adapters (multipart, batch, single run) call it,
 * and so can anything in the server that records traces without HTTP.
 *
 * One call is one transaction: every item is validated before anything is written, so a bad run
 * stores nothing of its batch. Re-sending a batch duplicates nothing (runs are upserted by
 * (workspace, id)); posts and patches of one run merge into the same row whichever arrives first
 * (see run-store.ts for the merge rules).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { PgCode, pgErrorCode, type Sql, storedCipherOf } from "../store/db.js";
import { lockFeedbackRuns } from "../store/feedback-store.js";
import { JsonTexts } from "../store/json-text.js";
import { ensureProjectsByName, existingProjectIds } from "../store/project-store.js";
import {
  insertFeedback,
  type RunAttachment,
  type RunRow,
  refreshFeedbackStats,
  updatePatchedRuns,
  upsertAttachments,
  upsertPatchedRuns,
  upsertPostedRuns,
  type WrittenRun,
} from "../store/run-store.js";
import { lockTraces, rollUpTraces, storedTraceIds } from "../store/trace-rollup-store.js";
import type { NormalizedRun } from "../store/trace-rows.js";
import { explainUnstorableInput } from "../store/unstorable-input.js";
import { inWorkspaceScopeWithGenericPlans, type WorkspaceBound } from "../store/workspace-scope.js";
import { type FeedbackInput, normalizeFeedback, normalizeRun, type RunInput } from "./run-normalizer.js";
import { recordTracesUsage } from "./usage-recorder.js";

/** Who ingests: the workspace the runs belong to and the credentials that sent them. */
export interface IngestActor {
  workspaceId: string;
  /** The user of the personal key that sent the runs; null for service keys and in-process callers. */
  userId: string | null;
  /** The key that sent the runs; null when none did. */
  apiKeyId: string | null;
}

/** One ingest request: run creates, run updates, feedback and attachments. */
export interface IngestBatch {
  post?: readonly RunInput[];
  patch?: readonly RunInput[];
  feedback?: readonly FeedbackInput[];
  attachments?: readonly RunAttachment[];
  /** The text the documents were parsed from, where the reader kept it (multipart parts). */
  texts?: JsonTexts;
}

/** What an ingest stored. */
export interface IngestResult {
  /** Distinct runs posted and patched. */
  runs: number;
  /** Feedback items received. */
  feedback: number;
  /** Traces first seen in this batch (root runs newly stored). */
  newTraces: number;
}

/** The ingest API. */
export interface IngestService {
  /**
   * Stores a batch for a workspace, atomically. Throws INVALID_ARGUMENT for a bad item (naming the
   * run and the rule), NOT_FOUND for a `session_id` the workspace has no project for, or for a
   * patch without dotted_order of a run that is not stored.
   */
  ingestRuns(actor: IngestActor, batch: IngestBatch): Promise<IngestResult>;
}

/** Dependencies of {@link createIngestService}. */
export interface IngestServiceDeps {
  sql: Sql;
  /** Count new traces in the usage rollups (AGENTPLANE_USAGE_REPORTING). */
  usageReporting: boolean;
}

/**
 * SQLSTATEs a retry resolves: a workspace deleted while the batch writes into it (foreign key
 * violation; a batch's projects are locked instead, migration 0027), or a deadlock between batches
 * that touch the same runs in another order.
 */
const RETRYABLE_CODES = new Set([PgCode.foreignKeyViolation, "40P01"]);

/** Creates the {@link IngestService}. */
export function createIngestService({ sql, usageReporting }: IngestServiceDeps): IngestService {
  // Documents go to Postgres as the text they arrived in, unless the pool encrypts JSON as it sends it.
  const plainJson = storedCipherOf(sql) === undefined;
  return {
    async ingestRuns(actor, batch) {
      const now = new Date();
      const posts = mergeById(batch.post ?? []).map((raw) => normalizeRun(raw, "post", now));
      const patches = mergeById(batch.patch ?? []).map((raw) => normalizeRun(raw, "patch", now));
      const feedback = (batch.feedback ?? []).map(normalizeFeedback);
      const attachments = batch.attachments ?? [];
      const writeOptions = plainJson ? { sourceTexts: batch.texts ?? new JsonTexts() } : {};
      try {
        // begin, the scope and the statements up to the runs' upsert go to Postgres together.
        // Planned once per connection: a batch's statements are the same every time, each by its keys.
        return await inWorkspaceScopeWithGenericPlans(sql, [actor.workspaceId], async (tx) => {
          // Every trace the batch writes is locked before anything is written (projects
          // included), in one ordered statement: batches of one trace then queue on its lock
          // instead of each holding a row the other needs while waiting for the lock it holds.
          const positioned = [...posts, ...patches.filter((p) => p.positioned)];
          const updateOnly = patches.filter((p) => !p.positioned);
          const locked = new Set([
            ...positioned.map((run) => run.traceId),
            ...(await storedTraceIds(
              tx,
              actor.workspaceId,
              updateOnly.map((p) => p.id),
            )),
          ]);
          // Sent together (postgres.js pipelines them), the locks first: Postgres runs them in order.
          // The runs the batch may create, and those its feedback is for, are locked as the
          // feedback API locks them (lockFeedbackRuns): feedback created for one of them while
          // the batch writes is either committed before the batch looks for it below, or waits
          // for the batch and then refreshes the stored run.
          const [, , projectOf] = await Promise.all([
            lockTraces(tx, actor.workspaceId, [...locked]),
            lockFeedbackRuns(tx, actor.workspaceId, [
              ...new Set([...positioned.map((run) => run.id), ...feedback.map((f) => f.runId)]),
            ]),
            resolveProjects(tx, actor.workspaceId, [...posts, ...patches]),
          ]);
          const sender = { userId: actor.userId, apiKeyId: actor.apiKeyId };
          const rows = (runs: NormalizedRun[]) => runs.map((run) => toRow(run, projectOf));
          const written: WrittenRun[] = [
            ...(await upsertPostedRuns(tx, actor.workspaceId, sender, rows(posts), writeOptions)),
            ...(await upsertPatchedRuns(
              tx,
              actor.workspaceId,
              sender,
              rows(patches.filter((p) => p.positioned)),
              writeOptions,
            )),
          ];
          const updatedRuns = await updatePatchedRuns(tx, actor.workspaceId, rows(updateOnly), writeOptions);
          const updated = new Set(updatedRuns.map((r) => r.id));
          const missing = updateOnly.filter((p) => !updated.has(p.id)).map((p) => p.id);
          if (missing.length > 0) {
            throw new ConnectError(
              `run ${missing.join(", ")} not found: a patch of a run not stored yet must carry its dotted_order`,
              Code.NotFound,
            );
          }
          const inserted = written.filter((w) => w.inserted);
          const newTraces = inserted.filter((w) => w.isRoot);
          const statsOf = new Set([...feedback.map((f) => f.runId), ...inserted.map((w) => w.id)]);
          // The statements below need none of each other's results: they are sent together, in this
          // order, and postgres.js pipelines them on the transaction's connection, so they cost one
          // round trip instead of one each. Postgres runs them in order; when one fails, the rest
          // fail as the transaction is aborted, and the first failure is the one that rejects.
          const touched = new Set([...written, ...updatedRuns].map((r) => r.traceId));
          // A run stored by a concurrent batch after the lookup above names its trace only now:
          // locked here, before the rollups read it (rarely anything, as the SDKs send dotted_order
          // with every patch).
          const lateLock = lockTraces(
            tx,
            actor.workspaceId,
            [...touched].filter((id) => !locked.has(id)),
          );
          // Feedback sent before its run is counted once the run arrives: a batch with feedback
          // refreshes the stats of its inserted runs with those of its feedback; one without asks
          // the rollups' statement whether any inserted run has feedback, and refreshes only then.
          const rollup = rollUpTraces(
            tx,
            actor.workspaceId,
            [...touched],
            feedback.length > 0 ? [] : [...statsOf],
          );
          const pipelined: Promise<unknown>[] = [lateLock, rollup];
          if (feedback.length > 0) {
            // Their runs were locked with the batch's: the refresh sees every committed item.
            pipelined.push(
              insertFeedback(tx, actor.workspaceId, feedback),
              refreshFeedbackStats(tx, actor.workspaceId, [...statsOf]),
            );
          }
          if (usageReporting) {
            pipelined.push(
              recordTracesUsage(
                tx,
                newTraces.map((root) => ({
                  workspaceId: actor.workspaceId,
                  projectId: root.sessionId,
                  userId: actor.userId,
                  apiKeyId: actor.apiKeyId,
                  receivedAt: root.receivedAt,
                })),
              ),
            );
          }
          await Promise.all(pipelined);
          if ((await rollup).feedback) await refreshFeedbackStats(tx, actor.workspaceId, [...statsOf]);
          // One statement per attachment, each awaited: not part of the pipeline above.
          await upsertAttachments(tx, actor.workspaceId, attachments);
          return {
            runs: posts.length + patches.length,
            feedback: feedback.length,
            newTraces: newTraces.length,
          };
        });
      } catch (error) {
        const code = pgErrorCode(error) ?? "";
        if (RETRYABLE_CODES.has(code)) {
          // 503: the SDKs retry it, and the retry re-resolves (or re-creates) the batch's projects.
          throw new ConnectError(
            "the batch conflicted with a concurrent change (a deleted workspace or a deadlock); send it again",
            Code.Unavailable,
          );
        }
        throw explainUnstorableInput(error) ?? error;
      }
    },
  };
}

/**
 * Items of one kind merged by id, in order (later fields win), so a batch that names a run twice
 * writes it once. Items without an id pass through for the normaliser to reject.
 */
function mergeById(items: readonly RunInput[]): RunInput[] {
  const byId = new Map<string, RunInput>();
  const out: RunInput[] = [];
  for (const item of items) {
    const id = typeof item?.id === "string" ? item.id.toLowerCase() : undefined;
    if (id === undefined) {
      out.push(item);
      continue;
    }
    const previous = byId.get(id);
    byId.set(id, previous ? { ...previous, ...item } : item);
  }
  return [...out, ...byId.values()];
}

/**
 * The project id of every run: named projects are created on first use; projects named by id must
 * exist in the workspace (a key never writes into another workspace's project).
 */
async function resolveProjects(
  tx: WorkspaceBound,
  workspaceId: string,
  runs: readonly NormalizedRun[],
): Promise<(run: NormalizedRun) => string> {
  const ids = new Set<string>();
  const names = new Set<string>();
  for (const run of runs) {
    if ("id" in run.project) ids.add(run.project.id);
    else names.add(run.project.name);
  }
  // Both sent at once; a batch that names an unknown project fails below and is rolled back whole.
  const [found, byName] = await Promise.all([
    existingProjectIds(tx, workspaceId, [...ids]),
    ensureProjectsByName(tx, workspaceId, [...names].sort()),
  ]);
  const unknown = [...ids].filter((id) => !found.has(id));
  if (unknown.length > 0) {
    throw new ConnectError(
      `tracing project ${unknown.join(", ")} not found in this workspace: send session_name to create one`,
      Code.NotFound,
    );
  }
  return (run) => {
    if ("id" in run.project) return run.project.id;
    const id = byName.get(run.project.name);
    if (id === undefined) throw new Error(`project "${run.project.name}" vanished while ingesting`);
    return id;
  };
}

/**
 * The run as the store writes it: the normalised run itself (made for this batch alone) with its
 * project's id added, rather than a copy of its thirty fields per run.
 */
function toRow(run: NormalizedRun, projectOf: (run: NormalizedRun) => string): RunRow {
  return Object.assign(run, { projectId: projectOf(run) });
}
