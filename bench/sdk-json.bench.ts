/**
 * The SDK's plain-JSON layer (`npm run bench:sdk-json`): what converting costs beside the protobuf
 * decoding and encoding a call does anyway, in this process, with no server. Answers: a page of
 * 1,000 v1 trace runs (tags, events and ancestors as ListValues) and a thread state holding 200
 * messages (one Value), each read from Connect JSON and from binary, then with the SDK's `toPlain`
 * on top. Requests: a run create whose input holds 200 messages, built by the caller as Values
 * (`fromJson(ValueSchema, …)`, what the SDK spared them) and encoded, beside the SDK's
 * `toRequestInit` of the plain input and the same encoding. Each cell runs for `--duration-s`,
 * alternating with its peer, `--rounds` times; the report gives ops/s and the ratio
 * SDK / plain protobuf (best round over best round, and the median of the rounds' ratios).
 *
 *   npm run bench:sdk-json -- [--duration-s 2] [--rounds 5]
 */
import { parseArgs } from "node:util";
import { create, fromBinary, fromJson, type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { CreateRunRequestSchema } from "../gen/agentplane/agents/v1/run_service_pb.js";
import { ThreadStateSchema } from "../gen/agentplane/agents/v1/thread_service_pb.js";
import { QueryRunsResponseSchema } from "../gen/agentplane/tracing/v1/run_service_pb.js";
import { toPlain, toRequestInit } from "../sdk/plain-json.js";
import { numberValue } from "./support/cli-values.js";
import { median } from "./support/round-ratios.js";

const { values: args } = parseArgs({
  options: { "duration-s": { type: "string" }, rounds: { type: "string" } },
});
const durationMs = numberValue("duration-s", args["duration-s"] ?? "2", 0.1) * 1000;
const rounds = numberValue("rounds", args.rounds ?? "5", 1, true);

/** Trace runs per page: the page size the langsmith SDK's listRuns asks for. */
const PAGE_RUNS = 1000;
/** Messages in a thread's state and in a run's input: a long conversation. */
const MESSAGES = 200;

const message = (i: number): JsonValue => ({
  type: i % 2 === 0 ? "human" : "ai",
  content: `message ${i} `.repeat(8),
  id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
  additional_kwargs: {},
  response_metadata: { model: "x", usage: { input_tokens: i, output_tokens: 2 * i } },
});
const messages = Array.from({ length: MESSAGES }, (_, i) => message(i));

const runsJson = {
  runs: Array.from({ length: PAGE_RUNS }, (_, i) => ({
    id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    name: "ChatModel",
    runType: "llm",
    tags: ["prod", "chat", `shard-${i % 8}`],
    events: [{ name: "new_token", time: "2026-03-02T12:00:00.000000Z" }],
    parentRunIds: ["00000000-0000-4000-8000-000000000001"],
    extra: { metadata: { user: `u${i % 50}` } },
  })),
};
const runsMessage = fromJson(QueryRunsResponseSchema, runsJson);
const stateMessage = fromJson(ThreadStateSchema, {
  values: { messages },
  next: [],
  createdAt: "2026-01-01T00:00:00Z",
});
const answers = {
  runs: {
    schema: QueryRunsResponseSchema,
    json: toJson(QueryRunsResponseSchema, runsMessage),
    bin: toBinary(QueryRunsResponseSchema, runsMessage),
  },
  state: {
    schema: ThreadStateSchema,
    json: toJson(ThreadStateSchema, stateMessage),
    bin: toBinary(ThreadStateSchema, stateMessage),
  },
};

/** A cell: a name and one operation; `peer` is the same work without the SDK's layer. */
interface Cell {
  readonly name: string;
  readonly sdk: () => unknown;
  readonly peer: () => unknown;
}

const cells: Cell[] = [];
for (const [name, a] of Object.entries(answers)) {
  const schema = a.schema as typeof QueryRunsResponseSchema;
  cells.push({
    name: `answer ${name}, Connect JSON`,
    peer: () => fromJson(schema, a.json),
    sdk: () => toPlain(schema, fromJson(schema, a.json)),
  });
  cells.push({
    name: `answer ${name}, binary`,
    peer: () => fromBinary(schema, a.bin),
    sdk: () => toPlain(schema, fromBinary(schema, a.bin)),
  });
}
cells.push({
  name: "request run create, binary",
  peer: () =>
    toBinary(
      CreateRunRequestSchema,
      create(CreateRunRequestSchema, { assistantId: "agent", input: fromJson(ValueSchema, { messages }) }),
    ),
  sdk: () =>
    toBinary(
      CreateRunRequestSchema,
      create(
        CreateRunRequestSchema,
        toRequestInit(CreateRunRequestSchema, { assistantId: "agent", input: { messages } }) as never,
      ),
    ),
});

/** Operations per second of `op` over `durationMs`. */
function opsPerSecond(op: () => unknown): number {
  const start = performance.now();
  let n = 0;
  while (performance.now() - start < durationMs) {
    op();
    n += 1;
  }
  return (n * 1000) / (performance.now() - start);
}

console.log(`sdk-json: ${rounds} rounds of ${durationMs / 1000} s per cell, SDK and peer alternating`);
console.log("cell                              peer ops/s    SDK ops/s   SDK/peer best   median (range)");
for (const cell of cells) {
  // Warm both up so neither round starts on unoptimised code.
  opsPerSecond(cell.peer);
  opsPerSecond(cell.sdk);
  const peer: number[] = [];
  const sdk: number[] = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      peer.push(opsPerSecond(cell.peer));
      sdk.push(opsPerSecond(cell.sdk));
    } else {
      sdk.push(opsPerSecond(cell.sdk));
      peer.push(opsPerSecond(cell.peer));
    }
  }
  const ratios = sdk.map((s, i) => s / peer[i]!);
  const best = Math.max(...sdk) / Math.max(...peer);
  console.log(
    `${cell.name.padEnd(32)} ${Math.max(...peer)
      .toFixed(1)
      .padStart(11)} ${Math.max(...sdk)
      .toFixed(1)
      .padStart(
        12,
      )} ${best.toFixed(3).padStart(15)}   ${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)})`,
  );
}
