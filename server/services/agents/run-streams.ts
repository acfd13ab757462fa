import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type ServerSentEvent,
  ServerSentEventSchema,
} from "../../../gen/agentplane/api/v1/server_sent_event_pb.js";
import { parseProtocolParams, protocolMethodOf } from "../../runtime/protocol/protocol-event.js";
import { endKey, type RunEventBus } from "../../runtime/run-event-bus.js";
import type { StreamMode } from "../../runtime/run-stream-modes.js";
import { type AgentRunRecord, findRun } from "../../store/agents/agent-run-store.js";
import { endedRecordOf } from "../../store/agents/run-end-announcement.js";
import { END_EVENT, eventId, eventsAfter, type RunEventRecord } from "../../store/agents/run-event-store.js";
import { type Sql, storedCipherOf } from "../../store/db.js";
import { invalid } from "../request-validation.js";

/**
 * Events read per query. A stream holds at most one page in memory and takes the next only after
 * the client took the last event (the SSE writer waits for the socket to drain), so a slow client
 * costs a page, never an unbounded buffer.
 */
const PAGE = 100;
/**
 * Longest wait for a notification before the stream reads anyway: the safety net for a NOTIFY lost
 * in a reconnect, and the interval at which a stream notices that its run vanished.
 */
const SAFETY_POLL_MS = 2_000;
/** As above for waiters, which read one row per wake-up. */
const WAIT_POLL_MS = 5_000;

/** Statuses of a run that has ended. */
export function hasEnded(run: AgentRunRecord): boolean {
  return run.status !== "pending" && run.status !== "running";
}

/**
 * The position a `Last-Event-ID` names: `<ms>-<seq>` or the older integer form (both stand for
 * the seq); `-1` and `-` mean "before the first event". Undefined when absent.
 */
export function parseLastEventId(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === "") return undefined;
  const id = raw.trim();
  if (id === "-1" || id === "-" || id === "0") return 0;
  const match = /^(?:\d+-)?(\d+)$/.exec(id);
  if (!match?.[1])
    throw invalid(`Last-Event-ID ${JSON.stringify(raw)} must be an event id such as 1732600000000-42, or -1`);
  return Number(match[1]);
}

/** Events every stream sends whatever its modes and namespaces: the run's own, not the graph's. */
const RUN_EVENTS = new Set(["metadata", "error", "feedback", "end"]);

/**
 * The filter of a stream's `stream_mode` and `namespace`: which event names pass. An event is named
 * `<mode>` for the root graph and `<mode>|<namespace segments…>` for a subgraph; with namespaces,
 * only events of exactly those namespaces pass (`""` the root's). The run's own events always do.
 */
export function eventFilter(
  modes: readonly StreamMode[] | undefined,
  namespaces?: ReadonlySet<string>,
): (event: string) => boolean {
  if (!modes && !namespaces) return () => true;
  let names: Set<string> | undefined;
  if (modes) {
    names = new Set<string>();
    for (const mode of modes) {
      if (mode === "messages-tuple") names.add("messages");
      else if (mode === "messages")
        for (const n of ["messages/partial", "messages/complete", "messages/metadata"]) names.add(n);
      else names.add(mode);
    }
  }
  return (event) => {
    const bar = event.indexOf("|");
    const mode = bar < 0 ? event : event.slice(0, bar);
    if (RUN_EVENTS.has(mode)) return true;
    if (names && !names.has(mode)) return false;
    return !namespaces || namespaces.has(bar < 0 ? "" : event.slice(bar + 1));
  };
}

/**
 * A stored event as the run streams send it. A protocol run's event (see protocol-event.ts) is sent
 * as the run endpoints name their events: its method, with the namespace of a subgraph's event
 * after `|`, and its payload as the data.
 */
function toMessage(record: RunEventRecord): ServerSentEvent {
  const method = protocolMethodOf(record.event);
  if (method !== undefined) {
    const params = parseProtocolParams(record.data);
    const name = params.namespace.length > 0 ? `${method}|${params.namespace.join("|")}` : method;
    return create(ServerSentEventSchema, {
      id: eventId(record),
      event: name,
      data: fromJson(ValueSchema, params.data),
    });
  }
  return create(ServerSentEventSchema, {
    id: eventId(record),
    event: record.event,
    data: fromJson(ValueSchema, JSON.parse(record.data) as JsonValue),
  });
}

/** A run's end event as run streams send it: `end`, `{run_id, status}`. */
function endMessage(record: RunEventRecord): ServerSentEvent {
  const stored = JSON.parse(record.data) as { status?: unknown } | null;
  // An end stored before the end event carried the status (data null) was a cancel's.
  const status = typeof stored?.status === "string" ? stored.status : "interrupted";
  return create(ServerSentEventSchema, {
    id: eventId(record),
    event: "end",
    data: fromJson(ValueSchema, { run_id: record.runId, status }),
  });
}

/** Events a search for a checkpoint reads per query (a run's stream is read in these pages). */
const CHECKPOINT_SEARCH_PAGE = 500;

/**
 * The seq of the run's event that reports checkpoint `checkpointId` (its `checkpoints` event, or a
 * `debug` checkpoint event), of the root graph or a subgraph; undefined when the run's stream never
 * named it (it streamed neither mode).
 */
export async function seqAfterCheckpoint(
  sql: Sql,
  run: { workspaceId: string; runId: string },
  checkpointId: string,
): Promise<number | undefined> {
  for (let after = 0; ; ) {
    const rows = await eventsAfter(sql, run.workspaceId, { runId: run.runId }, after, CHECKPOINT_SEARCH_PAGE);
    for (const row of rows) {
      after = row.seq;
      const mode = row.event.split("|")[0];
      if ((mode === "checkpoints" || mode === "debug") && row.data.includes(checkpointId)) {
        const data = JSON.parse(row.data) as { config?: unknown; payload?: { config?: unknown } };
        const config = (mode === "debug" ? data.payload?.config : data.config) as
          | { configurable?: { checkpoint_id?: unknown } }
          | undefined;
        if (config?.configurable?.checkpoint_id === checkpointId) return row.seq;
      }
    }
    if (rows.length < CHECKPOINT_SEARCH_PAGE) return undefined;
  }
}

/** What a stream reader needs. */
export interface StreamReaderDeps {
  sql: Sql;
  bus: RunEventBus;
}

/** How {@link readRunStream} reads a run's events. */
export interface RunStreamOptions {
  /** The seq after which events are sent (0: from the first). */
  afterSeq: number;
  /** Whether an event (by its name) is sent; the end marker never is. */
  accept: (event: string) => boolean;
  signal: AbortSignal;
  /** Send the run's end as a last `end` event `{run_id, status}` (the SDK 1.15 run streams' form). */
  endEvent?: boolean;
  /**
   * The run was just created and started by this process's worker (`startedHere` of createRun),
   * in the caller's current turn of the event loop: the watch opens before any of its events can be
   * stored and handed over here, so the stream need not read Postgres first. Only with `afterSeq`
   * 0; events announced by another process (a takeover) still send it to Postgres.
   */
  watchedFromStart?: boolean;
}

/**
 * A run's events after `afterSeq`, as they are written, until the run's end event. Works for a
 * run executing in any process: events come from Postgres, wake-ups from NOTIFY.
 */
export async function* readRunStream(
  deps: StreamReaderDeps,
  run: { workspaceId: string; runId: string },
  options: RunStreamOptions,
): AsyncGenerator<ServerSentEvent> {
  const { sql, bus } = deps;
  const watch = bus.watch(run.runId);
  try {
    let last = options.afterSeq;
    // Whether Postgres was read since the watch started: events written before it are only there.
    let read = options.watchedFromStart === true && options.afterSeq === 0;
    for (;;) {
      const seen = watch.version();
      // A run executing here hands its events over as it stores them: no read while they follow on.
      const handed = read ? watch.take(last) : undefined;
      const rows =
        handed && !handed.behind
          ? handed.rows
          : await eventsAfter(sql, run.workspaceId, { runId: run.runId }, last, PAGE);
      read = true;
      for (const row of rows) {
        last = row.seq;
        if (row.event === END_EVENT) {
          if (options.endEvent) yield endMessage(row);
          return;
        }
        if (options.accept(row.event)) yield toMessage(row);
      }
      if (rows.length === PAGE) continue;
      if (options.signal.aborted) return;
      await watch.changed(seen, SAFETY_POLL_MS, options.signal);
      if (watch.version() === seen && !options.signal.aborted) {
        // Nothing was notified: make sure the run still exists and has not ended unseen.
        const current = await findRun(sql, run.workspaceId, run.runId);
        if (!current) return;
        if (hasEnded(current)) {
          const tail = await eventsAfter(sql, run.workspaceId, { runId: run.runId }, last, PAGE);
          for (const row of tail) {
            if (row.event === END_EVENT) {
              if (options.endEvent) yield endMessage(row);
              return;
            }
            if (options.accept(row.event)) yield toMessage(row);
            last = row.seq;
          }
          if (tail.length < PAGE) return;
        }
      }
    }
  } finally {
    watch.close();
  }
}

/**
 * Every stored event of a thread's runs after `afterSeq`, in seq order (one run after another, and
 * new ones as they are written, from any process), until `signal` aborts. Run end markers are not
 * yielded. Reads a page at a time and waits for the thread's notifications in between.
 *
 * A run of the thread executing in this process hands its batches over as it stores them, and the
 * reader takes them without a read. Another writer may store an event of the thread between two
 * such batches (a cancel ending a queued run), whose notification can come after the reader took
 * the later batch: so each read of Postgres starts where the previous read ended, not at the last
 * event taken, and yields what the hand-overs skipped (the only events ever yielded out of seq
 * order, and each still once).
 */
export async function* threadEventRecords(
  deps: StreamReaderDeps,
  thread: { workspaceId: string; threadId: string },
  options: { afterSeq: number; signal: AbortSignal },
): AsyncGenerator<RunEventRecord> {
  const { sql, bus } = deps;
  const watch = bus.watch(thread.threadId);
  try {
    let last = options.afterSeq;
    // Whether Postgres was read since the watch started: events written before it are only there.
    let read = false;
    // Where the last read of Postgres ended, and the seqs taken from hand-overs since.
    let readThrough = options.afterSeq;
    const taken = new Set<number>();
    while (!options.signal.aborted) {
      const seen = watch.version();
      const handed = read ? watch.take(last) : undefined;
      let rows: RunEventRecord[];
      let fullPage = false;
      if (handed && !handed.behind) {
        rows = handed.rows;
        for (const row of rows) taken.add(row.seq);
      } else {
        const page = await eventsAfter(
          sql,
          thread.workspaceId,
          { threadId: thread.threadId },
          readThrough,
          PAGE,
        );
        read = true;
        fullPage = page.length === PAGE;
        // Nothing past the read's end: what was taken before it is all there is up to `last`.
        readThrough = page.at(-1)?.seq ?? Math.max(readThrough, last);
        rows = page.filter((row) => !taken.has(row.seq));
        for (const seq of taken) if (seq <= readThrough) taken.delete(seq);
      }
      for (const row of rows) {
        last = Math.max(last, row.seq);
        if (row.event !== END_EVENT) yield row;
      }
      if (fullPage) continue;
      await watch.changed(seen, SAFETY_POLL_MS, options.signal);
    }
  } finally {
    watch.close();
  }
}

/** Every event of a thread's runs after `afterSeq` that `accept` takes, until the client goes away. */
export async function* readThreadStream(
  deps: StreamReaderDeps,
  thread: { workspaceId: string; threadId: string },
  options: { afterSeq: number; accept: (event: string) => boolean; signal: AbortSignal },
): AsyncGenerator<ServerSentEvent> {
  for await (const row of threadEventRecords(deps, thread, options))
    if (options.accept(row.event)) yield toMessage(row);
}

/**
 * Waits until a run ends and answers it; undefined when it was deleted. No connection is held while
 * waiting: the run's end is notified, and the row is read once per wake-up, unless an attempt of
 * this process ended the run and handed it over, or the caller created the run (`created`: by the
 * caller, just now, in this process) and its end's NOTIFY announced what it wrote
 * (run-end-announcement.ts): then nothing is read. A run created here is not read before its end is
 * announced: the watch opens before it can end, and an announcement heard before that is
 * remembered by the bus.
 */
export async function waitForRunEnd(
  deps: StreamReaderDeps,
  run: { workspaceId: string; runId: string },
  signal: AbortSignal,
  options: { created?: AgentRunRecord } = {},
): Promise<AgentRunRecord | undefined> {
  const { created } = options;
  const watch = deps.bus.watch(endKey(run.runId));
  try {
    let read = created === undefined;
    for (;;) {
      const seen = watch.version();
      const handed = watch.ended();
      if (handed) return handed;
      const announced = created && watch.announced();
      if (announced) return endedRecordOf(created, announced, storedCipherOf(deps.sql));
      if (read || deps.bus.endAnnounced(run.runId)) {
        const current = await findRun(deps.sql, run.workspaceId, run.runId);
        if (!current || hasEnded(current)) return current;
      }
      if (signal.aborted) throw new ConnectError("the client went away before the run ended", Code.Canceled);
      await watch.changed(seen, WAIT_POLL_MS, signal);
      read = true;
    }
  } finally {
    watch.close();
  }
}

/** What wait and join answer for an ended run: its output (final values, or the error). */
export function outputOf(run: AgentRunRecord | undefined): JsonValue {
  if (!run) return {};
  return run.output ?? {};
}
