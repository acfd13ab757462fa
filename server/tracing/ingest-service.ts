/**
 * Trace ingest as an in-process service: the REST adapters (multipart, batch, single run) call it,
 * and so can anything in the server that records traces without HTTP.
 *
 * One call is one transaction (or two, the first rolled back, when a project id it remembered
 * proved stale): every item is validated before anything is written, so a bad run stores nothing
 * of its batch. Re-sending a batch duplicates nothing (runs are upserted by
 * (workspace, id)); posts and patches of one run merge into the same row whichever arrives first
 * (see run-store.ts for the merge rules).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { PgCode, pgErrorCode, type Sql, storedCipherOf } from "../store/db.js";
import { JsonTexts } from "../store/json-text.js";
import { lockFeedbackRuns } from "../store/tracing/feedback-store.js";
import { ProjectIdsByName } from "../store/tracing/project-ids-by-name.js";
import {
  confirmProjectIds,
  ensureProjectsByName,
  existingProjectIds,
} from "../store/tracing/project-store.js";
import {
  insertFeedback,
  type RunAttachment,
  type RunRow,
  type RunWriteOptions,
  refreshFeedbackStats,
  updatePatchedRuns,
  upsertAttachments,
  upsertPatchedRuns,
  upsertPostedRuns,
  type WrittenRun,
} from "../store/tracing/run-store.js";
import { lockTraces, rollUpTraces, storedTraceIds } from "../store/tracing/trace-rollup-store.js";
import type { NormalizedFeedback, NormalizedRun } from "../store/tracing/trace-rows.js";
import { inWorkspaceScopeWithGenericPlans, type WorkspaceBound } from "../store/tracing/workspace-scope.js";
import { explainUnstorableInput } from "../store/unstorable-input.js";
import type { SpanDraft } from "./otlp/span-draft.js";
import { placeOrphans, placeSpans, type SpanPlacement } from "./otlp/span-placement.js";
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

/** One OTLP export's spans, as drafts whose runs name their project. */
export interface SpanBatch {
  drafts: readonly SpanDraft[];
  /** The JSON texts the drafts' documents were parsed from (store/json-text.ts). */
  texts: JsonTexts;
}

/** What an OTLP export stored, and which of its spans it refused. */
export interface SpanIngestResult {
  /** Runs written (the export's spans placed in their traces, and spans that waited for them). */
  runs: number;
  /** Spans stored to wait for a parent not stored yet. */
  waiting: number;
  /** Spans refused, with why: the rest of the export is stored. */
  rejected: { runId: string; reason: string }[];
}

/** The ingest API. */
export interface IngestService {
  /**
   * Stores a batch for a workspace, atomically. Throws INVALID_ARGUMENT for a bad item (naming the
   * run and the rule), NOT_FOUND for a `session_id` the workspace has no project for, or for a
   * patch without dotted_order of a run that is not stored.
   */
  ingestRuns(actor: IngestActor, batch: IngestBatch): Promise<IngestResult>;
  /**
   * Stores OTLP spans (as drafts) for a workspace, atomically: each is placed under its parent (in
   * the batch or stored) and written as a run, with the spans that waited for it; a span whose
   * parent is not stored yet waits (otel-pending-store.ts). A span the ingest refuses (an unknown
   * project id, a field it rejects) is left out and reported; the rest are stored.
   */
  ingestSpans(actor: IngestActor, batch: SpanBatch): Promise<SpanIngestResult>;
  /**
   * Stores the spans waiting in the given OTel traces (ids as UUIDs) of the actor's workspace,
   * whose parents never came, as runs (span-placement.ts, placeOrphans), atomically; `rejected`
   * lists those that could not be (a field the ingest refuses), which are dropped.
   */
  storeOrphanedSpans(actor: IngestActor, otelTraceIds: readonly string[]): Promise<SpanIngestResult>;
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
  const remembered = new ProjectIdsByName();
  /**
   * Writes one batch in its transaction; `prepare` gives its items in that transaction (the OTLP
   * path looks up parents there). Retried once with the projects looked up when a remembered id
   * proved stale; Postgres errors a retry resolves become UNAVAILABLE.
   */
  const transact = async <T>(
    actor: IngestActor,
    texts: JsonTexts | undefined,
    prepare: (tx: WorkspaceBound) => { items: NormalizedBatch; extra: T; later?: () => Promise<LaterItems> },
  ): Promise<{ result: IngestResult; extra: T }> => {
    const writeOptions = plainJson ? { sourceTexts: texts ?? new JsonTexts() } : {};
    const write = (projectIds: ProjectIdsByName | undefined) =>
      // Planned once per connection: a batch's statements are the same every time, each by its keys.
      inWorkspaceScopeWithGenericPlans(sql, [actor.workspaceId], async (tx, commit) => {
        const { items, extra, later } = prepare(tx);
        const written = await writeBatch({
          tx,
          commit,
          actor,
          items,
          later,
          writeOptions,
          usageReporting,
          projectIds,
        });
        return { written, extra };
      });
    try {
      let done: Awaited<ReturnType<typeof write>>;
      try {
        done = await write(remembered);
      } catch (error) {
        if (!(error instanceof StaleProjectIds)) throw error;
        // Once, with the names looked up: the batch saw no remembered id it could trust.
        remembered.forget(actor.workspaceId, error.names);
        done = await write(undefined);
      }
      remembered.remember(actor.workspaceId, done.written.projectIds);
      return { result: done.written.result, extra: done.extra };
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
  };
  /** Writes the runs of a span placement in one transaction (see `transact`). */
  const placed = async (
    actor: IngestActor,
    texts: JsonTexts | undefined,
    place: (tx: WorkspaceBound) => SpanPlacement,
  ): Promise<SpanIngestResult> => {
    const { result, extra } = await transact(actor, texts, (tx) => {
      const placement = place(tx);
      const items = { posts: placement.posts, patches: [], feedback: [], attachments: [] };
      return { items, extra: placement, later: placement.rest };
    });
    return { runs: result.runs, waiting: extra.waiting(), rejected: extra.rejected };
  };
  return {
    async ingestRuns(actor, batch) {
      const now = new Date();
      const items: NormalizedBatch = {
        posts: mergeById(batch.post ?? []).map((raw) => normalizeRun(raw, "post", now)),
        patches: mergeById(batch.patch ?? []).map((raw) => normalizeRun(raw, "patch", now)),
        feedback: (batch.feedback ?? []).map(normalizeFeedback),
        attachments: batch.attachments ?? [],
      };
      return (await transact(actor, batch.texts, () => ({ items, extra: undefined }))).result;
    },
    ingestSpans(actor, { drafts, texts }) {
      // Placed as far as the batch alone places them; the rest once the first statements answer.
      return placed(actor, texts, (tx) => placeSpans(tx, actor.workspaceId, drafts, actor));
    },
    storeOrphanedSpans(actor, otelTraceIds) {
      return placed(actor, undefined, (tx) => placeOrphans(tx, actor.workspaceId, otelTraceIds));
    },
  };
}

/** A batch's items once validated. */
export interface NormalizedBatch {
  posts: NormalizedRun[];
  patches: NormalizedRun[];
  feedback: NormalizedFeedback[];
  attachments: readonly RunAttachment[];
}

/**
 * Runs of a batch known only once its first statements are answered (OTLP spans under a stored or
 * waiting parent, span-placement.ts), and the writes that go with them.
 */
export interface LaterItems {
  posts: NormalizedRun[];
  /** Starts the writes that go with the runs, in the pipeline of the batch's last statements. */
  writes(): Promise<unknown>[];
}

/** What one transaction of {@link writeBatch} needs. */
interface BatchWrite {
  tx: WorkspaceBound;
  /** Sends COMMIT behind the statements sent so far. */
  commit: () => Promise<void>;
  actor: IngestActor;
  items: NormalizedBatch;
  /** Called once the first statements are answered: more runs, written with the last ones. */
  later: (() => Promise<LaterItems>) | undefined;
  writeOptions: RunWriteOptions;
  usageReporting: boolean;
  /** Project ids to use without a lookup, confirmed in the same pipeline; undefined: look them up. */
  projectIds: ProjectIdsByName | undefined;
}

/** What a committed batch stored, and the ids of the projects it named. */
interface WrittenBatch {
  result: IngestResult;
  projectIds: ReadonlyMap<string, string>;
}

/**
 * Thrown inside a batch's transaction when a remembered project id proved stale: the transaction
 * rolls back and the batch is written again with its projects looked up.
 */
class StaleProjectIds extends Error {
  constructor(readonly names: readonly string[]) {
    super("remembered tracing project ids are stale");
  }
}

/**
 * Writes one batch in its transaction, in two round trips when its runs are positioned (the SDKs
 * send dotted_order with every patch) and its projects known: the locks, the projects' lock and the
 * runs' writes go out together; then the later runs (`later`), the rollups, the feedback, the usage
 * counts and COMMIT.
 */
async function writeBatch({
  tx,
  commit,
  actor,
  items,
  later,
  writeOptions,
  usageReporting,
  projectIds,
}: BatchWrite): Promise<WrittenBatch> {
  const { posts, patches, feedback, attachments } = items;
  const workspaceId = actor.workspaceId;
  // Every trace the batch writes is locked before anything is written (projects included), in one
  // ordered statement: batches of one trace then queue on its lock instead of each holding a row the
  // other needs while waiting for the lock it holds.
  const positioned = [...posts, ...patches.filter((p) => p.positioned)];
  const updateOnly = patches.filter((p) => !p.positioned);
  const locked = new Set([
    ...positioned.map((run) => run.traceId),
    ...(await storedTraceIds(
      tx,
      workspaceId,
      updateOnly.map((p) => p.id),
    )),
  ]);
  // Sent first: Postgres runs a connection's statements in the order sent. The runs the batch may
  // create, and those its feedback is for, are locked as the feedback API locks them
  // (lockFeedbackRuns): feedback created for one of them while the batch writes is either
  // committed before the batch refreshes their stats below, or waits for the batch and then
  // refreshes the stored run.
  const locks = Promise.all([
    lockTraces(tx, workspaceId, [...locked]),
    lockFeedbackRuns(tx, workspaceId, [
      ...new Set([...positioned.map((run) => run.id), ...feedback.map((f) => f.runId)]),
    ]),
  ]);
  // Awaited below with the writes; this handler only keeps a failure (the connection lost, the
  // transaction aborted) from being reported as unhandled when the projects' lookup fails with it
  // first and the batch ends before reaching that await.
  locks.catch(() => undefined);
  const projects = await resolveProjects(tx, workspaceId, [...posts, ...patches], projectIds);
  const sender = { userId: actor.userId, apiKeyId: actor.apiKeyId };
  const rows = (runs: NormalizedRun[]) => runs.map((run) => toRow(run, projects.idOf));
  const [, , posted, patched, updatedRuns] = await Promise.all([
    locks,
    projects.confirmed,
    upsertPostedRuns(tx, workspaceId, sender, rows(posts), writeOptions),
    upsertPatchedRuns(tx, workspaceId, sender, rows(patches.filter((p) => p.positioned)), writeOptions),
    updatePatchedRuns(tx, workspaceId, rows(updateOnly), writeOptions),
  ]);
  const updated = new Set(updatedRuns.map((r) => r.id));
  const missing = updateOnly.filter((p) => !updated.has(p.id)).map((p) => p.id);
  if (missing.length > 0) {
    throw new ConnectError(
      `run ${missing.join(", ")} not found: a patch of a run not stored yet must carry its dotted_order`,
      Code.NotFound,
    );
  }
  const written: WrittenRun[] = [...posted, ...patched];
  // The statements below need none of each other's results: they are sent together, in this
  // order, with COMMIT behind them, and postgres.js pipelines them on the transaction's connection,
  // so they cost one round trip instead of one each. Postgres runs them in order; when one fails, the
  // rest fail as the transaction is aborted, COMMIT answers ROLLBACK, and the first failure is the
  // one that rejects.
  const pipelined: Promise<unknown>[] = [];
  /** Runs written in the pipeline below, whose answers (inserted or not) are not awaited. */
  const unansweredIds: string[] = [];
  const touched = new Set([...written, ...updatedRuns].map((r) => r.traceId));
  const more = later === undefined ? undefined : await later();
  const laterPosts = more?.posts ?? [];
  if (more) {
    const idOf = await projectsOfLater(tx, workspaceId, laterPosts, projects);
    const laterRows = laterPosts.map((run) => toRow(run, idOf));
    for (const run of laterPosts) touched.add(run.traceId);
    // Their traces locked first (those of stored parents are not yet), in the same pipeline.
    const lockedLater = lockTraces(
      tx,
      workspaceId,
      [...touched].filter((id) => !locked.has(id)),
    );
    for (const id of touched) locked.add(id);
    const upserted = upsertPostedRuns(tx, workspaceId, sender, laterRows, writeOptions);
    if (laterPosts.some((run) => run.isRoot)) {
      // A new root counts as a trace in usage: its write is awaited to know whether it is new.
      written.push(...(await Promise.all([lockedLater, upserted]))[1]);
    } else {
      // Not awaited: which of them are new matters only for their feedback stats, refreshed below
      // for all of them (a statement that writes nothing where none has feedback).
      unansweredIds.push(...laterPosts.map((run) => run.id));
      pipelined.push(lockedLater, upserted);
    }
    pipelined.push(...more.writes());
  }
  const inserted = written.filter((w) => w.inserted);
  const newTraces = inserted.filter((w) => w.isRoot);
  pipelined.push(
    // A run stored by a concurrent batch after the lookup above names its trace only now: locked
    // here, before the rollups read it (rarely anything, as the SDKs send dotted_order with every
    // patch).
    lockTraces(
      tx,
      workspaceId,
      [...touched].filter((id) => !locked.has(id)),
    ),
    rollUpTraces(tx, workspaceId, [...touched]),
  );
  // Their runs were locked with the batch's: the refresh sees every committed item. Feedback sent
  // before its run is counted once the run arrives: the stats of inserted runs are refreshed too
  // (a statement that writes no row when none of them has feedback).
  if (feedback.length > 0) pipelined.push(insertFeedback(tx, workspaceId, feedback));
  pipelined.push(
    refreshFeedbackStats(tx, workspaceId, [
      ...new Set([...feedback.map((f) => f.runId), ...inserted.map((w) => w.id), ...unansweredIds]),
    ]),
  );
  if (usageReporting) {
    pipelined.push(
      recordTracesUsage(
        tx,
        newTraces.map((root) => ({
          workspaceId,
          projectId: root.sessionId,
          userId: actor.userId,
          apiKeyId: actor.apiKeyId,
          receivedAt: root.receivedAt,
        })),
      ),
    );
  }
  // Attachments follow, one statement each, awaited: COMMIT goes after them instead.
  if (attachments.length === 0) pipelined.push(commit());
  await Promise.all(pipelined);
  await upsertAttachments(tx, workspaceId, attachments);
  return {
    result: {
      runs: posts.length + patches.length + laterPosts.length,
      feedback: feedback.length,
      newTraces: newTraces.length,
    },
    projectIds: projects.byName,
  };
}

/**
 * The project id of each later run: those of the batch's projects as resolved, projects named by
 * id as they are (the placement checked them), and the other names ensured (one more round trip,
 * for a waiting span sent to a project the batch's own runs do not name).
 */
async function projectsOfLater(
  tx: WorkspaceBound,
  workspaceId: string,
  runs: readonly NormalizedRun[],
  projects: ResolvedProjects,
): Promise<(run: NormalizedRun) => string> {
  const missing = new Set<string>();
  for (const run of runs) {
    if ("name" in run.project && !projects.byName.has(run.project.name)) missing.add(run.project.name);
  }
  if (missing.size === 0) return projects.idOf;
  const more = await ensureProjectsByName(tx, workspaceId, [...missing].sort());
  return (run) =>
    "name" in run.project ? (more.get(run.project.name) ?? projects.idOf(run)) : run.project.id;
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

/** The projects of a batch's runs, as {@link resolveProjects} found them. */
interface ResolvedProjects {
  /** The project id of a run. */
  idOf: (run: NormalizedRun) => string;
  /** The ids of the named projects. */
  byName: ReadonlyMap<string, string>;
  /**
   * Settles once Postgres has confirmed the ids (and locked the projects): rejects with NOT_FOUND
   * for a project id the workspace has not, or with {@link StaleProjectIds}.
   */
  confirmed: Promise<void>;
}

/**
 * The project id of every run: named projects are created on first use; projects named by id must
 * exist in the workspace (a key never writes into another workspace's project). Each is locked
 * FOR KEY SHARE until the transaction ends, so it cannot be deleted or renamed under the batch.
 *
 * Without waiting for Postgres when every name is in `remembered` (and for projects given by id):
 * the runs then go out behind the statements that confirm the ids, in the same round trip, and
 * `confirmed` rejects if one did not hold, which rolls the batch back.
 */
async function resolveProjects(
  tx: WorkspaceBound,
  workspaceId: string,
  runs: readonly NormalizedRun[],
  remembered: ProjectIdsByName | undefined,
): Promise<ResolvedProjects> {
  const ids = new Set<string>();
  const names = new Set<string>();
  for (const run of runs) {
    if ("id" in run.project) ids.add(run.project.id);
    else names.add(run.project.name);
  }
  const checkIds = (found: Set<string>) => {
    const unknown = [...ids].filter((id) => !found.has(id));
    if (unknown.length > 0) {
      throw new ConnectError(
        `tracing project ${unknown.join(", ")} not found in this workspace: send session_name to create one`,
        Code.NotFound,
      );
    }
  };
  const idOf = (byName: ReadonlyMap<string, string>) => (run: NormalizedRun) => {
    if ("id" in run.project) return run.project.id;
    const id = byName.get(run.project.name);
    if (id === undefined) throw new Error(`project "${run.project.name}" vanished while ingesting`);
    return id;
  };
  const found = existingProjectIds(tx, workspaceId, [...ids]);
  const known = remembered?.lookup(workspaceId, names);
  if (known !== undefined) {
    const confirmed = Promise.all([found, confirmProjectIds(tx, workspaceId, known)]).then(
      ([existing, current]) => {
        checkIds(existing);
        if (!current) throw new StaleProjectIds([...names]);
      },
    );
    return { idOf: idOf(known), byName: known, confirmed };
  }
  // Both sent at once; a batch that names an unknown project fails and is rolled back whole.
  const [existing, byName] = await Promise.all([
    found,
    ensureProjectsByName(tx, workspaceId, [...names].sort()),
  ]);
  checkIds(existing);
  return { idOf: idOf(byName), byName, confirmed: Promise.resolve() };
}

/**
 * The run as the store writes it: the normalised run itself (made for this batch alone) with its
 * project's id added, rather than a copy of its thirty fields per run.
 */
function toRow(run: NormalizedRun, idOf: (run: NormalizedRun) => string): RunRow {
  return Object.assign(run, { projectId: idOf(run) });
}
