import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type ServerSentEvent,
  ServerSentEventSchema,
} from "../../../gen/agentplane/api/v1/server_sent_event_pb.js";
import { endKey, type RunEventBus } from "../../runtime/run-event-bus.js";
import type { StreamMode } from "../../runtime/run-stream-modes.js";
import { type AgentRunRecord, findRun } from "../../store/agent-run-store.js";
import type { Sql } from "../../store/db.js";
import { END_EVENT, eventId, eventsAfter, type RunEventRecord } from "../../store/run-event-store.js";
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

/** The filter of a join's `stream_mode`: which event names pass (metadata, error always do). */
export function eventFilter(modes: readonly StreamMode[] | undefined): (event: string) => boolean {
  if (!modes) return () => true;
  const names = new Set<string>(["metadata", "error", "feedback"]);
  for (const mode of modes) {
    if (mode === "messages-tuple") names.add("messages");
    else if (mode === "messages")
      for (const n of ["messages/partial", "messages/complete", "messages/metadata"]) names.add(n);
    else names.add(mode);
  }
  return (event) => names.has(event.split("|")[0] ?? event);
}

function toMessage(record: RunEventRecord): ServerSentEvent {
  return create(ServerSentEventSchema, {
    id: eventId(record),
    event: record.event,
    data: fromJson(ValueSchema, JSON.parse(record.data) as JsonValue),
  });
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
        if (row.event === END_EVENT) return;
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
            if (row.event === END_EVENT) return;
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
 * Every event of a thread's runs after `afterSeq`, one run after another, until the client goes
 * away. Run end markers are not sent.
 */
export async function* readThreadStream(
  deps: StreamReaderDeps,
  thread: { workspaceId: string; threadId: string },
  options: { afterSeq: number; accept: (event: string) => boolean; signal: AbortSignal },
): AsyncGenerator<ServerSentEvent> {
  const { sql, bus } = deps;
  const watch = bus.watch(thread.threadId);
  try {
    let last = options.afterSeq;
    while (!options.signal.aborted) {
      const seen = watch.version();
      const rows = await eventsAfter(sql, thread.workspaceId, { threadId: thread.threadId }, last, PAGE);
      for (const row of rows) {
        last = row.seq;
        if (row.event !== END_EVENT && options.accept(row.event)) yield toMessage(row);
      }
      if (rows.length === PAGE) continue;
      await watch.changed(seen, SAFETY_POLL_MS, options.signal);
    }
  } finally {
    watch.close();
  }
}

/**
 * Waits until a run ends and answers it; undefined when it was deleted. No connection is held while
 * waiting: the run's end is notified, and the row is read once per wake-up, unless an attempt of
 * this process ended the run and handed it over (then nothing is read). A run `createdHere` (by
 * the caller, just now, in this process) is not read before its end is announced: the watch opens
 * before it can end, and an announcement heard before that is remembered by the bus.
 */
export async function waitForRunEnd(
  deps: StreamReaderDeps,
  run: { workspaceId: string; runId: string },
  signal: AbortSignal,
  options: { createdHere?: boolean } = {},
): Promise<AgentRunRecord | undefined> {
  const watch = deps.bus.watch(endKey(run.runId));
  try {
    let read = options.createdHere !== true;
    for (;;) {
      const seen = watch.version();
      const handed = watch.ended();
      if (handed) return handed;
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
