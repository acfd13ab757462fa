/**
 * Trace data for isolation tests: two workspaces whose traces look alike. Workspace B holds random
 * traces; workspace A holds a twin of each (same names, tags, metadata, inputs, tokens, times and
 * feedback, other ids) and "shadows" of some (the very same run ids as B's, with content only A
 * has). A query of B that lets any row of A through then returns a twin (an id B never sent) or a
 * shadow (A's content under one of B's ids); a subquery that joins by id across workspaces finds a
 * shadow. Everything is drawn from a {@link Random}, so a seed reproduces the data.
 */
import type { FilterVocabulary, Scalar } from "./run-filter-generator.js";
import type { Random } from "./seeded-random.js";

/** A run as the langsmith SDK's `multipartIngestRuns` takes it (`RunCreate`). */
export interface LookAlikeRun {
  id: string;
  trace_id: string;
  dotted_order: string;
  parent_run_id?: string;
  name: string;
  run_type: string;
  /** ISO 8601 with microseconds. */
  start_time: string;
  end_time?: string;
  inputs: Record<string, unknown>;
  outputs?: Record<string, unknown>;
  error?: string;
  extra: { metadata: Record<string, unknown> };
  tags: string[];
  session_name: string;
  reference_example_id?: string;
  events?: { name: string; time: string }[];
  trace_tier?: string;
}

/** A feedback item, sent as a multipart `feedback.<id>` part. */
export interface LookAlikeFeedback {
  id: string;
  run_id: string;
  trace_id: string;
  key: string;
  score: number | null;
}

/** The traces of one workspace. */
export interface TraceSet {
  runs: LookAlikeRun[];
  feedback: LookAlikeFeedback[];
}

/** A tracing project both workspaces have (same name, an id of each). */
export interface LookAlikeProject {
  name: string;
  /** Its id in workspace A and in workspace B (created with these ids before ingest). */
  idA: string;
  idB: string;
}

/** The data of both workspaces. */
export interface LookAlikeWorkspaces {
  /** Workspace B: the caller's own traces. */
  b: TraceSet;
  /** Workspace A: twins of B's traces and shadows of some. */
  a: TraceSet;
  /** Projects of both workspaces; A also has {@link SHADOW_PROJECT}, which B does not. */
  projects: LookAlikeProject[];
  /** The id of {@link SHADOW_PROJECT} in A. */
  shadowProjectId: string;
}

/** Project of A's shadows; B has no project of that name. */
export const SHADOW_PROJECT = "iso-shadow";
/** What only A's shadows carry (a tag, a metadata value, an input, a feedback key, a name prefix). */
export const A_ONLY = "a-only";

/** When the generated traces start: a fixed instant, so every run of a seed has the same times. */
const BASE_MICROS = Date.UTC(2026, 1, 3, 4, 5, 6) * 1000;
/** Microseconds between trace starts: traces never overlap, and their order is their index. */
const TRACE_SPACING_MICROS = 9_000_000;
const MICROS_PER_MS = 1000;
/** Length of a dotted_order segment's time, `YYYYMMDDTHHMMSSffffffZ`, before its run id. */
const STAMP_LENGTH = 22;
const MICROS_PER_S = 1_000_000;

const PROJECTS = ["iso-alpha", "iso-beta"];
const NAMES: Record<string, string[]> = {
  chain: ["agent", "pipeline"],
  llm: ["ChatModel", "fake-llm"],
  tool: ["search-tool", "calculator"],
  retriever: ["retriever"],
  prompt: ["format-prompt"],
  parser: ["output-parser"],
  embedding: ["embedder"],
};
const TAGS = ["prod", "beta", "exp-1", "eval"];
const USERS = ["u1", "u2", "u3"];
const THREADS = ["th-1", "th-2", "th-3"];
const THREAD_KEYS = ["thread_id", "session_id", "conversation_id"];
const QUESTIONS = ["weather in Paris", "capital of France", "sum of 2 and 3", "100% sure_or not"];
const ANSWERS = ["sunny, 21 degrees", "Paris", "5", "I don't know"];
const ERRORS = ["rate limited", "timeout after 30s", "index unavailable"];
const FEEDBACK_KEYS = ["correctness", "helpfulness"];
const SCORES = [0, 0.5, 1, null];
/** Dataset examples a few runs were made for: the same in both workspaces. */
const EXAMPLES = ["5f0c3a52-6a8e-4c8e-9a57-0f9c2d1e7b01", "5f0c3a52-6a8e-4c8e-9a57-0f9c2d1e7b02"];

/** ISO 8601 with exactly six fractional digits, of microseconds since the epoch. */
export function isoMicros(micros: number): string {
  const seconds = new Date(Math.floor(micros / MICROS_PER_S) * 1000).toISOString().slice(0, 19);
  return `${seconds}.${String(micros % MICROS_PER_S).padStart(6, "0")}Z`;
}

/** A dotted_order segment: `YYYYMMDDTHHMMSSffffffZ<id>`. */
function segment(iso: string, id: string): string {
  return `${iso.replace(/[-:.]/g, "").slice(0, -1)}Z${id}`;
}

/**
 * The data of both workspaces: `traces` random traces of B with 1 to 6 runs each (nested up to
 * three deep), A's twin of each, and A's shadows of every third.
 */
export function lookAlikeWorkspaces(random: Random, traces: number): LookAlikeWorkspaces {
  const b: TraceSet = { runs: [], feedback: [] };
  for (let t = 0; t < traces; t++) addTrace(random, b, t);
  const twins = twin(random, b);
  const shadows = shadow(random, b, (_, i) => i % 3 === 0);
  return {
    b,
    a: { runs: [...twins.runs, ...shadows.runs], feedback: [...twins.feedback, ...shadows.feedback] },
    projects: PROJECTS.map((name) => ({ name, idA: random.uuid(), idB: random.uuid() })),
    shadowProjectId: random.uuid(),
  };
}

function addTrace(random: Random, set: TraceSet, index: number): void {
  const start = BASE_MICROS + index * TRACE_SPACING_MICROS + random.int(0, MICROS_PER_S - 1);
  const project = random.pick(PROJECTS);
  const tags = random.some(TAGS, 2);
  const thread = random.chance(0.6) ? { [random.pick(THREAD_KEYS)]: random.pick(THREADS) } : {};
  const root = makeRun(random, { start, project, tags, thread, parent: undefined, runType: "chain" });
  const runs = [root];
  const parents = [root];
  for (let n = random.int(0, 5); n > 0; n--) {
    const parent = random.pick(parents);
    const child = makeRun(random, {
      start: micros(parent.start_time) + random.int(1, 2_000_000),
      project,
      tags,
      thread,
      parent,
      runType: random.pick(Object.keys(NAMES)),
    });
    runs.push(child);
    if (child.dotted_order.split(".").length < 3) parents.push(child);
  }
  set.runs.push(...runs);
  for (const run of runs) {
    for (let n = random.chance(0.35) ? random.int(1, 2) : 0; n > 0; n--) {
      set.feedback.push({
        id: random.uuid(),
        run_id: run.id,
        trace_id: run.trace_id,
        key: random.pick(FEEDBACK_KEYS),
        score: random.pick(SCORES),
      });
    }
  }
}

interface RunShape {
  start: number;
  project: string;
  tags: string[];
  thread: Record<string, string>;
  parent: LookAlikeRun | undefined;
  runType: string;
}

function makeRun(random: Random, shape: RunShape): LookAlikeRun {
  const id = random.uuid();
  const startTime = isoMicros(shape.start);
  const ended = random.chance(0.85);
  const end = shape.start + random.int(10, 8000) * MICROS_PER_MS;
  const llm = shape.runType === "llm";
  const metadata: Record<string, unknown> = { ...shape.thread };
  if (random.chance(0.6)) metadata.user = random.pick(USERS);
  if (random.chance(0.4)) metadata.env = random.pick(["prod", "dev"]);
  if (random.chance(0.4)) metadata.version = random.int(1, 3);
  if (random.chance(0.2)) metadata.cached = random.chance(0.5);
  const prompt = random.int(3, 400);
  const completion = random.int(1, 200);
  const usage = {
    input_tokens: prompt,
    output_tokens: completion,
    total_tokens: prompt + completion,
    input_cost: prompt / 1000,
    output_cost: completion / 500,
    total_cost: prompt / 1000 + completion / 500,
  };
  const run: LookAlikeRun = {
    id,
    trace_id: shape.parent?.trace_id ?? id,
    dotted_order: shape.parent
      ? `${shape.parent.dotted_order}.${segment(startTime, id)}`
      : segment(startTime, id),
    name: random.pick(NAMES[shape.runType] ?? ["step"]),
    run_type: shape.runType,
    start_time: startTime,
    inputs: { question: random.pick(QUESTIONS), attempt: random.int(1, 3) },
    extra: { metadata },
    tags: random.chance(0.7) ? shape.tags : random.some(TAGS, 1),
    session_name: shape.project,
  };
  if (shape.parent) run.parent_run_id = shape.parent.id;
  if (ended) {
    run.end_time = isoMicros(end);
    run.outputs = { answer: random.pick(ANSWERS), ...(llm ? { usage_metadata: usage } : {}) };
    if (random.chance(0.15)) run.error = random.pick(ERRORS);
  }
  if (random.chance(0.2)) run.reference_example_id = random.pick(EXAMPLES);
  if (llm && random.chance(0.5))
    run.events = [{ name: "new_token", time: isoMicros(shape.start + random.int(1, 9) * MICROS_PER_MS) }];
  if (random.chance(0.2)) run.trace_tier = random.pick(["longlived", "shortlived"]);
  return run;
}

/** Microseconds since the epoch of an ISO time from {@link isoMicros}. */
function micros(iso: string): number {
  return Date.parse(`${iso.slice(0, 19)}Z`) * MICROS_PER_MS + Number(iso.slice(20, 26));
}

/** The same traces under new ids (and new feedback ids): what A's twins are. */
function twin(random: Random, set: TraceSet): TraceSet {
  const ids = new Map(set.runs.map((r) => [r.id, random.uuid()]));
  const map = (id: string) => ids.get(id) ?? id;
  return {
    runs: set.runs.map((r) => ({
      ...structuredClone(r),
      id: map(r.id),
      trace_id: map(r.trace_id),
      dotted_order: r.dotted_order
        .split(".")
        .map((s) => `${s.slice(0, STAMP_LENGTH)}${map(s.slice(STAMP_LENGTH))}`)
        .join("."),
      ...(r.parent_run_id ? { parent_run_id: map(r.parent_run_id) } : {}),
    })),
    feedback: set.feedback.map((f) => ({
      ...f,
      id: random.uuid(),
      run_id: map(f.run_id),
      trace_id: map(f.trace_id),
    })),
  };
}

/** The chosen traces of `set` under the same ids, with what only A has added or changed. */
function shadow(
  random: Random,
  set: TraceSet,
  chosen: (traceId: string, index: number) => boolean,
): TraceSet {
  const traceIds = [...new Set(set.runs.map((r) => r.trace_id))].filter(chosen);
  const runs = set.runs
    .filter((r) => traceIds.includes(r.trace_id))
    .map((r) => {
      const copy = structuredClone(r);
      copy.name = `${A_ONLY}-${r.name}`;
      copy.tags = [...r.tags, A_ONLY];
      copy.extra.metadata.owner = A_ONLY;
      copy.inputs = { ...r.inputs, secret: A_ONLY };
      copy.session_name = SHADOW_PROJECT;
      return copy;
    });
  return {
    runs,
    feedback: runs.map((r) => ({
      id: random.uuid(),
      run_id: r.id,
      trace_id: r.trace_id,
      key: A_ONLY,
      score: 1,
    })),
  };
}

/** Every value the data holds, per filter field and entry family: what generated filters draw from. */
export function vocabularyOf(data: LookAlikeWorkspaces): FilterVocabulary {
  const runs = [...data.b.runs, ...data.a.runs];
  const feedback = [...data.b.feedback, ...data.a.feedback];
  const values = <T>(pick: (r: LookAlikeRun) => T | undefined): T[] => [
    ...new Set(runs.map(pick).filter((v): v is T => v !== undefined)),
  ];
  const usage = (key: string) =>
    values((r) => (r.outputs?.usage_metadata as Record<string, number> | undefined)?.[key]);
  const scalar = (v: unknown): Scalar | null =>
    typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? v : null;
  const entries = (objects: (Record<string, unknown> | undefined)[]) => {
    const seen = new Map<string, { key: string; value: Scalar | null }>();
    for (const object of objects)
      for (const [key, value] of Object.entries(object ?? {}))
        seen.set(`${key}\u0000${JSON.stringify(value)}`, { key, value: scalar(value) });
    return [...seen.values()];
  };
  const latency = (r: LookAlikeRun) =>
    r.end_time === undefined ? undefined : (micros(r.end_time) - micros(r.start_time)) / MICROS_PER_S;
  return {
    columns: {
      id: values((r) => r.id),
      trace_id: values((r) => r.trace_id),
      session_id: [...data.projects.flatMap((p) => [p.idA, p.idB]), data.shadowProjectId],
      parent_run_id: values((r) => r.parent_run_id),
      reference_example_id: EXAMPLES,
      name: values((r) => r.name),
      run_type: values((r) => r.run_type),
      error: values((r) => r.error),
      thread_id: THREADS,
      dotted_order: values((r) => r.dotted_order),
      start_time: values((r) => r.start_time),
      end_time: values((r) => r.end_time),
      first_token_time: values((r) => r.events?.[0]?.time),
      latency: values(latency),
      total_tokens: usage("total_tokens"),
      prompt_tokens: usage("input_tokens"),
      completion_tokens: usage("output_tokens"),
      total_cost: usage("total_cost"),
      prompt_cost: usage("input_cost"),
      completion_cost: usage("output_cost"),
      is_root: [true, false],
    },
    tags: [...new Set(runs.flatMap((r) => r.tags))],
    entries: {
      metadata: entries(runs.map((r) => r.extra.metadata)),
      input: entries(runs.map((r) => r.inputs)),
      output: entries(runs.map((r) => r.outputs)),
      feedback: [
        ...new Map(feedback.map((f) => [`${f.key}/${f.score}`, { key: f.key, value: f.score }])).values(),
      ],
    },
    texts: [...values((r) => r.name), ...QUESTIONS, ...ANSWERS, ...ERRORS, A_ONLY],
  };
}
