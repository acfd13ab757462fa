/**
 * A run stream opened by the request that created and started the run here (`watchedFromStart`):
 * it takes the events this process's writer hands over without reading Postgres first, and still
 * reads Postgres, from the run's first event, as soon as another process announces events of it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { createRunEventBus, type RunEventBus } from "../../server/runtime/run-event-bus.js";
import { readRunStream } from "../../server/services/agents/run-streams.js";
import { appendRunEvents, END_EVENT } from "../../server/store/agents/run-event-store.js";
import { useTestDatabase } from "../support/database.js";

const db = useTestDatabase();

let bus: RunEventBus | undefined;
afterEach(async () => {
  await bus?.close();
  bus = undefined;
});

const newRun = () => ({ workspaceId: uuidv7(), runId: uuidv7(), threadId: uuidv7() });
const event = (name: string, n: number) => ({ ms: 1_700_000_000_000 + n, event: name, data: `{"n":${n}}` });

/** The run's stream from its first event, opened as the request that started the run here opens it. */
function watchedFromStart(run: ReturnType<typeof newRun>) {
  const signal = new AbortController().signal;
  return readRunStream({ sql: db().sql, bus: bus as RunEventBus }, run, {
    afterSeq: 0,
    accept: () => true,
    signal,
    watchedFromStart: true,
  });
}

/** The names of the stream's events until it ends. */
async function drain(stream: AsyncGenerator<{ event: string; data?: unknown }>): Promise<string[]> {
  const seen: string[] = [];
  for await (const message of stream) seen.push(message.event);
  return seen;
}

describe("a run stream watched from the run's start", () => {
  it("takes the events handed over here without reading Postgres first", async () => {
    bus = await createRunEventBus(db().sql);
    const run = newRun();
    // Stored before the stream opens and never announced to it: a first read would send it.
    await appendRunEvents(db().sql, run, [event("planted", 0)]);
    const stream = watchedFromStart(run);
    const first = stream.next();
    // This process's writer stores the run's first events and hands them over.
    const done = bus.writing(run.runId);
    const stored = await appendRunEvents(db().sql, run, [event("metadata", 1), event("values", 2)]);
    done({ previousSeq: 0, rows: stored });
    const handed = bus.writing(run.runId);
    const end = await appendRunEvents(db().sql, run, [{ ...event(END_EVENT, 3), data: "null" }]);
    handed({ previousSeq: stored[1]?.seq, rows: end });
    const seen = [(await first).value?.event, ...(await drain(stream))];
    expect(seen).toEqual(["metadata", "values"]);
  });

  it("reads Postgres from the first event once another process announces events of the run", async () => {
    bus = await createRunEventBus(db().sql);
    const run = newRun();
    const stream = watchedFromStart(run);
    const seen = drain(stream);
    // Written with no hand-over here, as a worker in another process writes: only the NOTIFY arrives.
    await appendRunEvents(db().sql, run, [event("metadata", 1), event("values", 2)]);
    await appendRunEvents(db().sql, run, [event("updates", 3), { ...event(END_EVENT, 4), data: "null" }]);
    expect(await seen).toEqual(["metadata", "values", "updates"]);
  });

  it("without the option, reads what was stored before the stream opened", async () => {
    bus = await createRunEventBus(db().sql);
    const run = newRun();
    await appendRunEvents(db().sql, run, [event("metadata", 1), { ...event(END_EVENT, 2), data: "null" }]);
    const signal = new AbortController().signal;
    const stream = readRunStream({ sql: db().sql, bus }, run, { afterSeq: 0, accept: () => true, signal });
    expect(await drain(stream)).toEqual(["metadata"]);
  });
});
