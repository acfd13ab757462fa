/**
 * The scenarios of test/e2e/fixtures/edge-graphs, run through the official `@langchain/langgraph-sdk`
 * (and plain fetch where the SDK has no call) against any Agent Server: `bench/capture-js-edges.ts`
 * runs them against the LangGraph JS server (`langgraphjs dev`) and stores its answers in the
 * fixture's `js-server-answers.json`; the edge tests run them against agentplane and compare, each
 * saying what "the same" means for its scenario. Every scenario answers plain JSON with the server's
 * ids and times as they came; {@link normalizeIds} makes two answers comparable.
 */
import { Client } from "@langchain/langgraph-sdk";

/** A server the scenarios run against. */
export interface EdgeTarget {
  readonly baseUrl: string;
  /** A client acting as `user` (a bearer token, for the custom auth config), or as the operator. */
  client(user?: string): Client;
  /** Plain fetch with the operator's credentials (none on the JS server). */
  fetch(path: string, init?: RequestInit): Promise<Response>;
}

/** A target with the given operator headers (agentplane's API key; nothing for the JS server). */
export function edgeTarget(baseUrl: string, operatorHeaders: Record<string, string> = {}): EdgeTarget {
  return {
    baseUrl,
    client: (user) =>
      new Client({
        apiUrl: baseUrl,
        apiKey: null,
        defaultHeaders: user === undefined ? operatorHeaders : { Authorization: `Bearer ${user}` },
        callerOptions: { maxRetries: 0 },
      }),
    fetch: (path, init = {}) =>
      fetch(`${baseUrl}${path}`, {
        ...init,
        headers: {
          ...(init.body === undefined ? {} : { "content-type": "application/json" }),
          ...operatorHeaders,
          ...(init.headers ?? {}),
        },
      }),
  };
}

/** One stream event, without its SSE id (ids differ in form between servers). */
export interface Event {
  event: string;
  // biome-ignore lint/suspicious/noExplicitAny: stream payloads are whatever the graph produced
  data: any;
}

/**
 * Reads a stream to its end, without a run stream's final `end` event (`{run_id, status}`, which
 * SDK 1.15 reads and agentplane sends; the JS server 1.5.1 sends none, so it is no part of a
 * comparison; test/e2e/runs-streams.test.ts checks it).
 */
export async function events(stream: AsyncIterable<unknown>): Promise<Event[]> {
  const out: Event[] = [];
  for await (const part of stream) {
    const { event, data } = part as Event;
    out.push({ event, data });
  }
  return out.at(-1)?.event === "end" ? out.slice(0, -1) : out;
}

/** What a call answered: its value, or the HTTP status it failed with. */
export type Outcome<T> = { ok: T } | { status: number };

/** Runs a call, keeping a refusal's status rather than throwing (bodies differ between servers). */
export async function outcome<T>(call: Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: await call };
  } catch (error) {
    const status = (error as { status?: number }).status;
    if (typeof status !== "number") throw error;
    return { status };
  }
}

/** A message of the human, as the SDK sends it. */
const human = (content: string, id: string) => ({ role: "human", content, id });

/**
 * Items 1 and 2: `trip` stops on `interrupt()` inside its `booking` subgraph. Read as the SDK reads
 * it (thread, state with and without subgraphs), edited on the subgraph's checkpoint namespace,
 * resumed with `command.resume`; and a second thread resumed without an edit.
 */
export async function subgraphInterrupt(target: EdgeTarget) {
  const sdk = target.client();
  const thread = await sdk.threads.create();
  const modes = { streamMode: ["values", "updates"] as ("values" | "updates")[], streamSubgraphs: true };
  const first = await events(
    sdk.runs.stream(thread.thread_id, "trip", { input: { messages: [human("a trip", "h1")] }, ...modes }),
  );
  const interrupted = await sdk.threads.get(thread.thread_id);
  const withSubgraphs = await sdk.threads.getState(thread.thread_id, undefined, { subgraphs: true });
  const state = await sdk.threads.getState(thread.thread_id);
  const subgraph = state.tasks[0]?.checkpoint ?? undefined;
  const edit = await sdk.threads.updateState(thread.thread_id, {
    values: { hotel: "Harbour Inn" },
    ...(subgraph ? { checkpoint: subgraph } : {}),
  });
  const edited = await sdk.threads.getState(thread.thread_id, subgraph);
  const afterEdit = await sdk.threads.get(thread.thread_id);
  const resumed = await events(
    sdk.runs.stream(thread.thread_id, "trip", { command: { resume: "yes" }, ...modes }),
  );
  const done = await sdk.threads.get(thread.thread_id);

  const plain = await sdk.threads.create();
  await sdk.runs.wait(plain.thread_id, "trip", { input: { messages: [human("a trip", "h2")] } });
  const resumedPlain = await sdk.runs.wait(plain.thread_id, "trip", { command: { resume: "no" } });
  return {
    first,
    interrupted: { status: interrupted.status, interrupts: interrupted.interrupts },
    withSubgraphs,
    state,
    edit,
    edited,
    afterEditStatus: afterEdit.status,
    resumed,
    done: { status: done.status, values: done.values, interrupts: done.interrupts },
    resumedPlain,
  };
}

/** Item 2: a thread stopped by `interrupt_before`, edited with `updateState`, stays interrupted. */
export async function editWhileInterrupted(target: EdgeTarget) {
  const sdk = target.client();
  const thread = await sdk.threads.create();
  await sdk.runs.wait(thread.thread_id, "steps", { input: { topic: "owls" }, interruptBefore: ["publish"] });
  const before = (await sdk.threads.get(thread.thread_id)).status;
  await sdk.threads.updateState(thread.thread_id, { values: { text: "edited by a human" } });
  const after = await sdk.threads.get(thread.thread_id);
  const next = (await sdk.threads.getState(thread.thread_id)).next;
  const finished = await sdk.runs.wait(thread.thread_id, "steps", { input: null });
  return {
    before,
    after: after.status,
    next,
    finished,
    end: (await sdk.threads.get(thread.thread_id)).status,
  };
}

/** Graphs whose `/schemas` and `/subgraphs` are compared (item 3, item 9). */
export const SCHEMA_GRAPHS = ["trip", "steps", "chat", "dynamic", "notes", "inbox", "echo"] as const;

/** Items 3 and 9: `/schemas` and `/subgraphs?recurse=true` of every graph, as status and body. */
export async function schemas(target: EdgeTarget) {
  const read = async (path: string) => {
    const res = await target.fetch(path, { signal: AbortSignal.timeout(180_000) });
    return res.ok ? { ok: (await res.json()) as Record<string, unknown> } : { status: res.status };
  };
  const out = {} as Record<(typeof SCHEMA_GRAPHS)[number], { schemas: unknown; subgraphs: unknown }>;
  for (const graph of SCHEMA_GRAPHS)
    out[graph] = {
      schemas: await read(`/assistants/${graph}/schemas`),
      subgraphs: await read(`/assistants/${graph}/subgraphs?recurse=true`),
    };
  return out;
}

/**
 * Item 4: the `debug` stream of a run stopped by `interrupt_before`, of the run that continues it,
 * and of a run continued from a checkpoint of the history; with the thread's history after each.
 */
export async function debugStreams(target: EdgeTarget) {
  const sdk = target.client();
  const thread = await sdk.threads.create();
  const stopped = await events(
    sdk.runs.stream(thread.thread_id, "steps", {
      input: { topic: "cats" },
      streamMode: "debug",
      interruptBefore: ["publish"],
    }),
  );
  const continued = await events(
    sdk.runs.stream(thread.thread_id, "steps", { input: null, streamMode: "debug" }),
  );
  const history = await sdk.threads.getHistory(thread.thread_id, { limit: 10 });

  const forked = await sdk.threads.create();
  await sdk.runs.wait(forked.thread_id, "steps", { input: { topic: "dogs" }, interruptBefore: ["draft"] });
  const [latest] = await sdk.threads.getHistory(forked.thread_id, { limit: 1 });
  const fromCheckpoint = await events(
    sdk.runs.stream(forked.thread_id, "steps", {
      streamMode: "debug",
      ...(latest ? { checkpoint: latest.checkpoint } : {}),
    }),
  );
  const forkedHistory = await sdk.threads.getHistory(forked.thread_id, { limit: 10 });
  return { stopped, continued, history, fromCheckpoint, forkedHistory };
}

/** The stream mode mixes of item 5. */
export const MESSAGE_MIXES = [
  ["messages"],
  ["messages", "values"],
  ["values", "messages", "updates"],
  ["messages", "messages-tuple"],
  ["messages", "debug"],
] as const;

/** Item 5: `messages` mixed with other modes on the `chat` graph (a model streaming its reply). */
export async function messageMixes(target: EdgeTarget) {
  const sdk = target.client();
  const out: Record<string, Event[]> = {};
  for (const mix of MESSAGE_MIXES) {
    const thread = await sdk.threads.create();
    out[mix.join(",")] = await events(
      sdk.runs.stream(thread.thread_id, "chat", {
        input: { messages: [human("hello", "h1")] },
        streamMode: [...mix],
      }),
    );
  }
  return out;
}

/** Item 6: a stateless run's `debug`, `checkpoints` and `tasks` streams. */
export async function statelessCheckpoints(target: EdgeTarget) {
  const sdk = target.client();
  return events(
    sdk.runs.stream(null, "steps", {
      input: { topic: "bees" },
      streamMode: ["debug", "checkpoints", "tasks"],
    }),
  );
}

/**
 * Item 7: `dynamic` (a factory of its config) run through an assistant whose config names the
 * node, then its thread's state updated as that node.
 */
export async function dynamicGraph(target: EdgeTarget) {
  const sdk = target.client();
  const assistant = await sdk.assistants.create({
    graphId: "dynamic",
    config: { configurable: { nodeName: "assistant" } },
  });
  const thread = await sdk.threads.create({ graphId: "dynamic" });
  const run = await events(
    sdk.runs.stream(thread.thread_id, assistant.assistant_id, {
      input: { messages: ["input"] },
      streamMode: ["updates"],
    }),
  );
  const update = await outcome(
    sdk.threads.updateState(thread.thread_id, { values: { messages: "update" }, asNode: "assistant" }),
  );
  const state = await sdk.threads.getState(thread.thread_id);
  return { run, update: "ok" in update ? "ok" : update, values: state.values, next: state.next };
}

/**
 * Items 10 and 11: the graphs file's Hono app. Its middleware reads the JSON body of run routes and
 * adds `configurable.stamp` (seen in the `echo` graph's answer); `/custom/run` runs `echo` through
 * `new Client()` with no URL.
 */
export async function customApp(target: EdgeTarget) {
  const wait = async (path: string) => {
    const res = await target.fetch(path, {
      method: "POST",
      headers: { "x-stamp": "from-middleware" },
      body: JSON.stringify({ assistant_id: "echo", input: { text: "hi" } }),
    });
    return res.ok ? { ok: (await res.json()) as unknown } : { status: res.status };
  };
  const thread = await target.client().threads.create();
  const stateless = await wait("/runs/wait");
  const onThread = await wait(`/threads/${thread.thread_id}/runs/wait`);
  const route = await target.fetch("/custom/run?text=yo");
  return {
    stateless,
    onThread,
    route: route.ok ? { ok: (await route.json()) as unknown } : { status: route.status },
  };
}

/** Item 12: the HTML `LoadExternalComponent` gets for the `hotel-card` component, and its bundle. */
export async function generativeUi(target: EdgeTarget) {
  const html = await target.client()["~ui"].getComponent("trip", "hotel-card");
  const src = /src="([^"]+)"/.exec(html)?.[1];
  const bundle = src ? await (await fetch(src)).text() : "";
  // The modules the bundle asks the page for: through `__require` (esbuild's shim, which the JS
  // server points at the page's LGUI_REQUIRE) or through LGUI_REQUIRE itself.
  const asked = [...bundle.matchAll(/(?:__require|Symbol\.for\("LGUI_REQUIRE"\)\])\("([^"]+)"\)/g)];
  return {
    html: html.replaceAll(new URL(target.baseUrl).host, "<host>").replace(/localhost:\d+/g, "<host>"),
    hostRequire: bundle.includes('globalThis[Symbol.for("LGUI_REQUIRE")]'),
    modules: [...new Set(asked.map((m) => m[1]))].sort(),
  };
}

/**
 * Items 13-16, on the custom auth config (`langgraph.auth.json`): streams of one's own runs (a
 * thread's and a stateless one's), another user's copy of a thread, store access under a store
 * filter, and the system assistants under an owner filter.
 */
export async function customAuth(target: EdgeTarget) {
  const alice = target.client("alice");
  const bob = target.client("bob");
  const thread = await alice.threads.create();
  const streamed = await events(alice.runs.stream(thread.thread_id, "echo", { input: { text: "a" } }));
  const resumable = await alice.runs.create(thread.thread_id, "echo", {
    input: { text: "b" },
    streamResumable: true,
  });
  const joined = await events(
    alice.runs.joinStream(thread.thread_id, resumable.run_id, { lastEventId: "-1" }),
  );
  // The SDK's type says on_completion is "complete" | "continue"; the servers take "delete" | "keep".
  const statelessRun = await alice.runs.create(null, "echo", {
    input: { text: "c" },
    streamResumable: true,
    onCompletion: "keep",
  } as unknown as Parameters<Client["runs"]["create"]>[2]);
  const statelessJoined = await events(
    alice.runs.joinStream(null, statelessRun.run_id, { lastEventId: "-1" }),
  );
  const copyByOther = await outcome(bob.threads.copy(thread.thread_id));
  const copyOwn = await outcome(alice.threads.copy(thread.thread_id).then((c) => c.metadata?.owner));

  const store = {
    putOwn: await outcome(alice.store.putItem(["alice", "notes"], "k1", { v: 1 })),
    putOutside: await outcome(alice.store.putItem(["bob", "notes"], "k2", { v: 2 })),
    getOwn: await outcome(alice.store.getItem(["alice", "notes"], "k1").then((i) => i?.value ?? null)),
    getByOther: await outcome(bob.store.getItem(["alice", "notes"], "k1")),
    getMissing: await outcome(bob.store.getItem(["bob", "notes"], "none")),
    overwriteByOther: await outcome(bob.store.putItem(["alice", "notes"], "k1", { v: 9 })),
    searchOwn: await outcome(alice.store.searchItems(["alice"]).then((r) => r.items.map((i) => i.key))),
    searchByOther: await outcome(bob.store.searchItems(["alice"]).then((r) => r.items.map((i) => i.key))),
    namespacesOwn: await outcome(alice.store.listNamespaces().then((r) => r.namespaces)),
    namespacesByOther: await outcome(bob.store.listNamespaces().then((r) => r.namespaces)),
    deleteByOther: await outcome(bob.store.deleteItem(["alice", "notes"], "k1")),
    deleteMissingOutside: await outcome(bob.store.deleteItem(["alice", "notes"], "none")),
    deleteOwn: await outcome(alice.store.deleteItem(["alice", "notes"], "k1")),
  };

  const assistants = {
    searchSystem: await outcome(alice.assistants.search({ graphId: "echo" }).then((r) => r.length)),
    getSystem: await outcome(alice.assistants.get("echo").then((a) => a.graph_id)),
    schemasSystem: await outcome(alice.assistants.getSchemas("echo").then((s) => s.graph_id)),
    runByGraphId: await outcome(alice.runs.wait(null, "echo", { input: { text: "x" } })),
  };
  const own = await alice.assistants.create({ graphId: "echo" });
  const assistantsAfter = {
    searchOwn: await outcome(
      alice.assistants.search({ graphId: "echo" }).then((r) => r.map((a) => a.metadata)),
    ),
    getByOther: await outcome(bob.assistants.get(own.assistant_id)),
  };
  return {
    streamed: streamed.map((e) => e.event),
    joined: joined.map((e) => e.event),
    statelessJoined: statelessJoined.map((e) => e.event),
    copyByOther,
    copyOwn,
    store,
    assistants: { ...assistants, ...assistantsAfter },
  };
}

/** Every scenario of the main config (`langgraph.json`), by name. */
export const MAIN_SCENARIOS = {
  subgraphInterrupt,
  editWhileInterrupted,
  schemas,
  debugStreams,
  messageMixes,
  statelessCheckpoints,
  dynamicGraph,
  customApp,
  generativeUi,
} as const;

/** What the JS server answered, as `bench/capture-js-edges.ts` stores it. */
export interface EdgeAnswers {
  captured_with: string;
  main: { [K in keyof typeof MAIN_SCENARIOS]: Awaited<ReturnType<(typeof MAIN_SCENARIOS)[K]>> };
  auth: Awaited<ReturnType<typeof customAuth>>;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
/** Interrupt ids and the like: 32 hex digits. */
const HEX_ID = /\b[0-9a-f]{32}\b/g;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

/**
 * `value` with every id (UUIDs, 32-hex ids) replaced by `<id1>`, `<id2>`… in order of first
 * appearance (object keys visited in sorted order) and every ISO time by `<time>`: two answers of
 * the same shape, whose ids relate the same way (a checkpoint that is the next one's parent), then
 * compare equal.
 */
export function normalizeIds(value: unknown): unknown {
  const ids = new Map<string, string>();
  const rename = (id: string) => {
    let name = ids.get(id);
    if (!name) {
      name = `<id${ids.size + 1}>`;
      ids.set(id, name);
    }
    return name;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      if (ISO_TIME.test(v)) return "<time>";
      return v.replace(UUID, rename).replace(HEX_ID, rename);
    }
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== "object" || v === null) return v;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(v).sort())
      out[walk(key) as string] = walk((v as Record<string, unknown>)[key]);
    return out;
  };
  return walk(value);
}

/**
 * `value` without the keys named in `keys`, at any depth: what a comparison leaves out (each test
 * says which keys and why).
 */
export function without(value: unknown, keys: readonly string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => without(v, keys));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value))
    if (!keys.includes(key)) out[key] = without(member, keys);
  return out;
}
