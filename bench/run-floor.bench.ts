/**
 * The floor of a run (`npm run bench:run-floor`): CPU per run of LangGraph itself on the runs
 * bench's one-node graph (bench/runs/graph.ts), in this process, with no server around it: the
 * graph's `invoke`, its `stream` (values, as a server streams it), its `streamEvents` (the
 * callback event stream) and its protocol events (`streamEvents` v3, what a protocol v2 run
 * executes), each with the library's MemorySaver and with agentplane's
 * PostgresCheckpointer (a workspace of a throwaway embedded Postgres, fsync off). A new thread per
 * run, `concurrency` runs in flight, as the runs bench's throughput cell. CPU counts this process
 * and, for Postgres, the database's backends. What a server adds to a run is the runs bench's CPU
 * per run minus this floor; the aim (7× the JS server at about 72 runs/s on 2 cores) leaves
 * about 4 ms per run for everything.
 *
 * What tracing adds to a run's own CPU: `stream` with the Postgres checkpointer again with one
 * callback handler, a no-op one (LangChain's callback machinery alone) and agentplane's run tracer
 * (its records built and buffered; the sink takes them and writes nothing, so this is the work done
 * inside the run, not the ingest after it). Each twice, with LangChain's own `CallbackManager.copy`
 * and with the linear copy the server installs (server/patches/langchain-callback-manager-copy.ts).
 *
 * The floor of the runs bench's first `values` latency: one run at a time, the time from `stream`
 * to its first `values` chunk (the run bench's graph has one: after its node), with the Postgres
 * checkpointer, without callbacks and with the run tracer as a server runs it; beside it, what one
 * Postgres round trip of a server's run takes on this machine, one at a time: `select 1` and one
 * run event stored as a server stores a run's output before its streams send it (its channel
 * listened to, as every server listens to it).
 *
 *   npm run bench:run-floor -- [--duration-s 5] [--warmup-s 1] [--concurrency 50] [--rounds 3] [--samples 300]
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { CallbackManager } from "@langchain/core/callbacks/manager";
import { type BaseCheckpointSaver, MemorySaver } from "@langchain/langgraph";
import { uuidv7 } from "../server/ids.js";
import { createLogger } from "../server/logger.js";
import {
  libraryCallbackManagerCopy,
  linearCallbackManagerCopy,
} from "../server/patches/langchain-callback-manager-copy.js";
import { PostgresCheckpointer } from "../server/runtime/postgres-checkpointer.js";
import { createRunTracing } from "../server/runtime/run-tracer.js";
import { appendEventBatches, RUN_EVENTS_CHANNEL } from "../server/store/agents/run-event-store.js";
import { createSql } from "../server/store/db.js";
import { insertOrganization } from "../server/store/iam/organization-store.js";
import { insertWorkspace } from "../server/store/iam/workspace-store.js";
import { migrate } from "../server/store/migrate.js";
import { graph } from "./runs/graph.js";
import { startBenchPostgres } from "./support/bench-postgres.js";
import { numberValue } from "./support/cli-values.js";
import { runClosedLoop } from "./support/closed-loop.js";
import { cpuMeter, cpuSecondsBetween } from "./support/cpu-meter.js";
import { percentile } from "./support/percentile.js";
import { tableRow } from "./support/table-row.js";

/**
 * How a case drives the graph: `protocol events` is `streamEvents` version v3, the event stream a
 * protocol v2 run executes (server/runtime/protocol/protocol-run-executor.ts).
 */
type Drive = "invoke" | "stream" | "streamEvents" | "protocol events";
const DRIVES: Drive[] = ["invoke", "stream", "streamEvents", "protocol events"];
/** Connections of the checkpointer's pool: as many as the server's default pool. */
const POOL_MAX = 10;

const { values } = parseArgs({
  options: {
    "duration-s": { type: "string", default: "5" },
    "warmup-s": { type: "string", default: "1" },
    // The runs bench's concurrency.
    concurrency: { type: "string", default: "50" },
    rounds: { type: "string", default: "3" },
    // One-at-a-time latency samples per round: enough for a steady p50 on a noisy machine.
    samples: { type: "string", default: "300" },
  },
});
const timing = {
  durationMs: numberValue("duration-s", values["duration-s"], 0.1) * 1000,
  warmupMs: numberValue("warmup-s", values["warmup-s"], 0) * 1000,
};
const concurrency = numberValue("concurrency", values.concurrency, 1, true);
const rounds = numberValue("rounds", values.rounds, 1, true);
const samples = numberValue("samples", values.samples, 1, true);
/** Unmeasured calls before each latency series: the JIT and the pool warm up on them. */
const LATENCY_WARMUP_CALLS = 50;

/** The callback handler of a run: none, a no-op one, or agentplane's run tracer. */
type Handler = "none" | "no-op handler" | "run tracer";
/** Which `CallbackManager.copy` a case runs with. */
type Copy = "library copy" | "linear copy";
const COPIES: Record<Copy, typeof CallbackManager.prototype.copy> = {
  "library copy": libraryCallbackManagerCopy,
  "linear copy": linearCallbackManagerCopy,
};

/** A handler that handles nothing: what LangChain's callback machinery costs by itself. */
class NoOpHandler extends BaseCallbackHandler {
  override name = "bench_no_op";
  // As the run tracer: called inline rather than through LangChain's background queue.
  override awaitHandlers = true;
}

/** The run tracer as a server sets it up, its batches taken and dropped: the cost inside the run. */
const tracing = createRunTracing({ sink: async () => undefined, log: createLogger("error") });

/** The run tracer's handler for one run, as a server starts it. */
function tracerOf(runId: string) {
  return tracing.start({
    workspaceId: "floor",
    runId,
    graphId: "agent",
    kwargs: {},
    creator: { apiKeyId: null, userId: null },
  });
}

/** The run's metadata as the run executor sets it (ids of the run, thread, graph, assistant). */
function runMetadata(runId: string, threadId: string): Record<string, unknown> {
  return { run_id: runId, run_attempt: 1, thread_id: threadId, graph_id: "agent", assistant_id: runId };
}

/** One run of the graph on a new thread, driven as `drive` says; throws unless it answers "ok". */
async function runOnce(saver: BaseCheckpointSaver, drive: Drive, handler: Handler = "none"): Promise<void> {
  const compiled = graph.withConfig({});
  compiled.checkpointer = saver;
  const runId = uuidv7();
  const threadId = uuidv7();
  const callbacks =
    handler === "none" ? undefined : handler === "no-op handler" ? [new NoOpHandler()] : [tracerOf(runId)];
  // The ids as the server passes them, with or without callbacks: checkpoints record the metadata.
  const config = {
    configurable: { thread_id: threadId },
    runId,
    metadata: runMetadata(runId, threadId),
    ...(callbacks ? { callbacks } : {}),
  };
  let reply: unknown;
  if (drive === "invoke") reply = (await compiled.invoke({}, config)).reply;
  else if (drive === "stream") {
    for await (const chunk of await compiled.stream({}, { ...config, streamMode: ["values"] }))
      reply = (chunk as [string, { reply?: string }])[1].reply;
  } else if (drive === "protocol events") {
    const events = (await compiled.streamEvents({}, {
      ...config,
      version: "v3",
    } as unknown as Parameters<typeof compiled.streamEvents>[1])) as AsyncIterable<{
      method: string;
      params: { namespace: string[]; data: { reply?: string } };
    }>;
    for await (const event of events)
      if (event.method === "values" && event.params.namespace.length === 0) reply = event.params.data.reply;
  } else {
    for await (const event of compiled.streamEvents({}, { ...config, version: "v2" }))
      if (event.event === "on_chain_end" && event.name === "LangGraph")
        reply = (event.data.output as { reply?: string }).reply;
  }
  if (reply !== "ok") throw new Error(`the graph answered ${JSON.stringify(reply)}`);
}

/**
 * One run as the runs bench's first-values cell times it, on a new thread: ms from calling
 * `stream` to its first `values` chunk. The run is streamed to its end before this returns, so the
 * next one starts with nothing of it in flight, as the runs bench's calls follow one another.
 */
async function firstValuesMs(saver: BaseCheckpointSaver, handler: Handler): Promise<number> {
  const compiled = graph.withConfig({});
  compiled.checkpointer = saver;
  const runId = uuidv7();
  const threadId = uuidv7();
  const callbacks = handler === "none" ? undefined : [tracerOf(runId)];
  const started = performance.now();
  let first: number | undefined;
  const chunks = await compiled.stream(
    {},
    {
      configurable: { thread_id: threadId },
      runId,
      metadata: runMetadata(runId, threadId),
      ...(callbacks ? { callbacks } : {}),
      streamMode: ["values"],
    },
  );
  for await (const [mode] of chunks as AsyncIterable<[string, unknown]>)
    if (mode === "values") first ??= performance.now() - started;
  if (first === undefined) throw new Error("the graph streamed no values chunk");
  return first;
}

/** ms of each of `n` calls of `call`, one after another. */
async function timedSeries(n: number, call: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await call());
  return out;
}

/** ms `call` takes. */
async function timed(call: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await call();
  return performance.now() - started;
}

const pg = await startBenchPostgres("run-floor");
const sql = createSql(pg.url, { max: POOL_MAX, statementTimeoutMs: 0, applicationName: "bench-run-floor" });
const admin = createSql(pg.url, { max: 1, statementTimeoutMs: 0, applicationName: "bench-run-floor-meter" });
const listener = createSql(pg.url, {
  max: 1,
  statementTimeoutMs: 0,
  applicationName: "bench-run-floor-listener",
});
try {
  await migrate(sql);
  const organizationId = randomUUID();
  const workspaceId = randomUUID();
  await insertOrganization(sql, { id: organizationId, displayName: "floor", plan: "enterprise" });
  await insertWorkspace(sql, {
    id: workspaceId,
    organizationId,
    displayName: "floor",
    tenantHandle: "floor",
    isPersonal: false,
  });
  const savers: [string, () => BaseCheckpointSaver][] = [
    // A fresh MemorySaver per round: it keeps every checkpoint, and a growing map is not the floor.
    ["MemorySaver", () => new MemorySaver()],
    ["PostgresCheckpointer", () => new PostgresCheckpointer(sql, workspaceId)],
  ];
  const meter = cpuMeter(admin, "bench", process.pid);
  interface Case {
    label: string;
    saver: () => BaseCheckpointSaver;
    drive: Drive;
    handler: Handler;
    copy: Copy;
  }
  const cases: Case[] = savers.flatMap(([name, saver]) =>
    DRIVES.map((drive) => ({
      label: `${drive} + ${name}`,
      saver,
      drive,
      handler: "none" as const,
      copy: "library copy" as const,
    })),
  );
  const postgres = savers[1]?.[1] ?? (() => new PostgresCheckpointer(sql, workspaceId));
  for (const handler of ["no-op handler", "run tracer"] as const)
    for (const copy of ["library copy", "linear copy"] as const)
      cases.push({
        label: `stream + Postgres, ${handler}, ${copy}`,
        saver: postgres,
        drive: "stream",
        handler,
        copy,
      });
  const results = new Map<string, { cpuMs: number[]; rps: number[] }>();
  console.log(
    `run floor: bench/runs/graph.ts in-process, Node ${process.version}; ${concurrency} in flight, ` +
      `${timing.durationMs / 1000} s after ${timing.warmupMs / 1000} s warm-up; ${rounds} round(s), median`,
  );
  for (let round = 0; round < rounds; round++) {
    for (const c of cases) {
      CallbackManager.prototype.copy = COPIES[c.copy];
      const saver = c.saver();
      let completed = 0;
      const before = await meter.read();
      const loop = await runClosedLoop(
        async () => {
          await runOnce(saver, c.drive, c.handler);
          completed++;
        },
        concurrency,
        timing,
      );
      const after = await meter.read();
      if (loop.errors > 0) throw new Error(`${c.label}: ${loop.firstError}`);
      const cell = results.get(c.label) ?? { cpuMs: [], rps: [] };
      // Every completed run of the cell, warm-up included, divides the CPU spent over the whole cell.
      cell.cpuMs.push((cpuSecondsBetween(before, after) * 1000) / completed);
      cell.rps.push(loop.rps);
      results.set(c.label, cell);
    }
  }
  const latencies = new Map<string, number[]>();
  const latency = async (label: string, call: () => Promise<number>): Promise<void> => {
    await timedSeries(LATENCY_WARMUP_CALLS, call);
    const sorted = Float64Array.from(await timedSeries(samples, call)).sort();
    latencies.set(label, [...(latencies.get(label) ?? []), percentile(sorted, 50)]);
  };
  // As a server runs graphs: the linear copy installed, and the run events' channel listened to
  // (every server listens to it, and a notification's delivery is part of an event's store).
  CallbackManager.prototype.copy = linearCallbackManagerCopy;
  await listener.listen(RUN_EVENTS_CHANNEL, () => {});
  for (let round = 0; round < rounds; round++) {
    await latency("stream → first values, Postgres, no callbacks", () => firstValuesMs(postgres(), "none"));
    await latency("stream → first values, Postgres, run tracer", () =>
      firstValuesMs(postgres(), "run tracer"),
    );
    await latency("round trip: select 1", () => timed(() => sql`select 1`));
    await latency("round trip: one run event stored, channel listened", () =>
      timed(() =>
        appendEventBatches(sql, [
          {
            run: { workspaceId, runId: uuidv7(), threadId: uuidv7() },
            events: [{ ms: Date.now(), event: "values", data: '{"reply":"ok"}' }],
            first: false,
          },
        ]),
      ),
    );
  }
  CallbackManager.prototype.copy = libraryCallbackManagerCopy;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
  const widths = [52, 18, 16, 10, 22];
  const plain = results.get("stream + PostgresCheckpointer")?.cpuMs ?? [];
  console.log(
    `\n${tableRow(["case", "CPU ms/run (median)", "range", "runs/s", "+ms vs no callbacks"], widths)}`,
  );
  for (const [label, cell] of results) {
    const cpu = median(cell.cpuMs);
    // Paired by round (the cases of a round ran one after another), so slow spells of a shared
    // machine fall on both sides of each difference.
    const added = median(cell.cpuMs.map((ms, i) => ms - (plain[i] ?? Number.NaN)));
    const addedText = label.startsWith("stream + Postgres,")
      ? `${added >= 0 ? "+" : ""}${added.toFixed(2)}`
      : "";
    console.log(
      tableRow([label, cpu.toFixed(2), range(cell.cpuMs), median(cell.rps).toFixed(0), addedText], widths),
    );
  }
  console.log(`\n${tableRow(["one at a time", "p50 ms (median)", "range of p50s"], widths)}`);
  for (const [label, p50s] of latencies)
    console.log(tableRow([label, median(p50s).toFixed(2), range(p50s)], widths));
} finally {
  await sql.end();
  await admin.end();
  await listener.end();
  await pg.stop();
}
