/**
 * The floor of a run (`npm run bench:run-floor`): CPU per run of LangGraph itself on the runs
 * bench's one-node graph (bench/runs/graph.ts), in this process, with no server around it: the
 * graph's `invoke`, its `stream` (values, as a server streams it) and its `streamEvents` (the
 * callback event stream), each with the library's MemorySaver and with agentplane's
 * PostgresCheckpointer (a workspace of a throwaway embedded Postgres, fsync off). A new thread per
 * run, `concurrency` runs in flight, as the runs bench's throughput cell. CPU counts this process
 * and, for Postgres, the database's backends. What a server adds to a run is the runs bench's CPU
 * per run minus this floor; the aim (7× the JS server at about 72 runs/s on 2 cores) leaves
 * about 4 ms per run for everything.
 *
 *   npm run bench:run-floor -- [--duration-s 5] [--warmup-s 1] [--concurrency 50] [--rounds 3]
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { type BaseCheckpointSaver, MemorySaver } from "@langchain/langgraph";
import { uuidv7 } from "../server/ids.js";
import { PostgresCheckpointer } from "../server/runtime/postgres-checkpointer.js";
import { createSql } from "../server/store/db.js";
import { migrate } from "../server/store/migrate.js";
import { insertOrganization } from "../server/store/organization-store.js";
import { insertWorkspace } from "../server/store/workspace-store.js";
import { graph } from "./runs/graph.js";
import { startBenchPostgres } from "./support/bench-postgres.js";
import { numberValue } from "./support/cli-values.js";
import { runClosedLoop } from "./support/closed-loop.js";
import { cpuMeter, cpuSecondsBetween } from "./support/cpu-meter.js";
import { tableRow } from "./support/table-row.js";

/** How a case drives the graph. */
type Drive = "invoke" | "stream" | "streamEvents";
const DRIVES: Drive[] = ["invoke", "stream", "streamEvents"];
/** Connections of the checkpointer's pool: as many as the server's default pool. */
const POOL_MAX = 10;

const { values } = parseArgs({
  options: {
    "duration-s": { type: "string", default: "5" },
    "warmup-s": { type: "string", default: "1" },
    // The runs bench's concurrency.
    concurrency: { type: "string", default: "50" },
    rounds: { type: "string", default: "3" },
  },
});
const timing = {
  durationMs: numberValue("duration-s", values["duration-s"], 0.1) * 1000,
  warmupMs: numberValue("warmup-s", values["warmup-s"], 0) * 1000,
};
const concurrency = numberValue("concurrency", values.concurrency, 1, true);
const rounds = numberValue("rounds", values.rounds, 1, true);

/** One run of the graph on a new thread, driven as `drive` says; throws unless it answers "ok". */
async function runOnce(saver: BaseCheckpointSaver, drive: Drive): Promise<void> {
  const compiled = graph.withConfig({});
  compiled.checkpointer = saver;
  const config = { configurable: { thread_id: uuidv7() } };
  let reply: unknown;
  if (drive === "invoke") reply = (await compiled.invoke({}, config)).reply;
  else if (drive === "stream") {
    for await (const chunk of await compiled.stream({}, { ...config, streamMode: ["values"] }))
      reply = (chunk as [string, { reply?: string }])[1].reply;
  } else {
    for await (const event of compiled.streamEvents({}, { ...config, version: "v2" }))
      if (event.event === "on_chain_end" && event.name === "LangGraph")
        reply = (event.data.output as { reply?: string }).reply;
  }
  if (reply !== "ok") throw new Error(`the graph answered ${JSON.stringify(reply)}`);
}

const pg = await startBenchPostgres("run-floor");
const sql = createSql(pg.url, { max: POOL_MAX, statementTimeoutMs: 0, applicationName: "bench-run-floor" });
const admin = createSql(pg.url, { max: 1, statementTimeoutMs: 0, applicationName: "bench-run-floor-meter" });
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
  const results = new Map<string, { cpuMs: number[]; rps: number[] }>();
  console.log(
    `run floor: bench/runs/graph.ts in-process, Node ${process.version}; ${concurrency} in flight, ` +
      `${timing.durationMs / 1000} s after ${timing.warmupMs / 1000} s warm-up; ${rounds} round(s), median`,
  );
  for (let round = 0; round < rounds; round++) {
    for (const [name, make] of savers) {
      for (const drive of DRIVES) {
        const saver = make();
        let completed = 0;
        const before = await meter.read();
        const loop = await runClosedLoop(
          async () => {
            await runOnce(saver, drive);
            completed++;
          },
          concurrency,
          timing,
        );
        const after = await meter.read();
        if (loop.errors > 0) throw new Error(`${name} ${drive}: ${loop.firstError}`);
        const label = `${drive} + ${name}`;
        const cell = results.get(label) ?? { cpuMs: [], rps: [] };
        // Every completed run of the cell, warm-up included, divides the CPU spent over the whole cell.
        cell.cpuMs.push((cpuSecondsBetween(before, after) * 1000) / completed);
        cell.rps.push(loop.rps);
        results.set(label, cell);
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
  const widths = [36, 18, 16, 14];
  console.log(`\n${tableRow(["case", "CPU ms/run (median)", "range", "runs/s"], widths)}`);
  for (const [label, cell] of results)
    console.log(
      tableRow(
        [label, median(cell.cpuMs).toFixed(2), range(cell.cpuMs), median(cell.rps).toFixed(0)],
        widths,
      ),
    );
} finally {
  await sql.end();
  await admin.end();
  await pg.stop();
}
