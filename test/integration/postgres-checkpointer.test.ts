import {
  Annotation,
  Command,
  END,
  interrupt,
  START,
  StateGraph,
  type StateSnapshot,
} from "@langchain/langgraph";
import { type CheckpointMetadata, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import {
  copyThreadCheckpoints,
  deleteThreadCheckpoints,
  PostgresCheckpointer,
  pruneThreadCheckpoints,
  threadCheckpointStorage,
} from "../../server/runtime/postgres-checkpointer.js";
import type { Sql } from "../../server/store/db.js";
import { useTestDatabase } from "../support/database.js";
import { createTestWorkspace } from "../support/tenancy.js";

const database = useTestDatabase();

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  name: Annotation<string>(),
});

/** Two nodes: `ask` interrupts for a name, `greet` uses it. */
function compileGraph(checkpointer: PostgresCheckpointer) {
  return new StateGraph(State)
    .addNode("ask", () => ({ log: ["ask"], name: interrupt("what is your name?") as string }))
    .addNode("greet", (state) => ({ log: [`hello ${state.name}`] }))
    .addEdge(START, "ask")
    .addEdge("ask", "greet")
    .addEdge("greet", END)
    .compile({ checkpointer });
}

type Graph = ReturnType<typeof compileGraph>;

function threadConfig(threadId: string) {
  return { configurable: { thread_id: threadId } };
}

async function history(graph: Graph, threadId: string): Promise<StateSnapshot[]> {
  const snapshots: StateSnapshot[] = [];
  for await (const s of graph.getStateHistory(threadConfig(threadId))) snapshots.push(s);
  return snapshots;
}

/** Runs a thread to its interrupt, then resumes it to the end. */
async function runToEnd(graph: Graph, threadId: string): Promise<void> {
  await graph.invoke({ log: ["start"] }, threadConfig(threadId));
  await graph.invoke(new Command({ resume: "Ada" }), threadConfig(threadId));
}

async function countRows(
  sql: Sql,
  table: "checkpoints" | "checkpoint_blobs" | "checkpoint_writes",
  threadId: string,
) {
  const [row] = await sql<
    { n: number }[]
  >`select count(*)::int as n from ${sql(table)} where thread_id = ${threadId}`;
  return row?.n ?? 0;
}

/** Channel values of the thread that the newest checkpoint of their namespace does not name. */
async function blobsNotNamedByLatest(sql: Sql, threadId: string) {
  const [row] = await sql<{ n: number }[]>`
    with latest as (
      select distinct on (checkpoint_ns) checkpoint_ns, channel_versions from checkpoints
      where thread_id = ${threadId} order by checkpoint_ns, checkpoint_id desc)
    select count(*)::int as n from checkpoint_blobs b
    where b.thread_id = ${threadId} and not exists (
      select 1 from latest l cross join lateral jsonb_each_text(l.channel_versions) v
      where l.checkpoint_ns = b.checkpoint_ns and v.key = b.channel and v.value = b.version)`;
  return row?.n ?? 0;
}

describe("PostgresCheckpointer with a LangGraph StateGraph", () => {
  let workspaceA = "";
  let workspaceB = "";
  let graphA: Graph;
  let graphB: Graph;

  beforeAll(async () => {
    workspaceA = await createTestWorkspace(database().sql);
    workspaceB = await createTestWorkspace(database().sql);
    graphA = compileGraph(new PostgresCheckpointer(database().sql, workspaceA));
    graphB = compileGraph(new PostgresCheckpointer(database().sql, workspaceB));
  });

  it("stops at the interrupt, persists it, and resumes from it", async () => {
    const threadId = uuidv7();
    const first = await graphA.invoke({ log: ["start"] }, threadConfig(threadId));
    expect(first.log).toEqual(["start"]);

    // A fresh saver and graph (as in another process) see the interrupted state.
    const reloaded = compileGraph(new PostgresCheckpointer(database().sql, workspaceA));
    const interrupted = await reloaded.getState(threadConfig(threadId));
    expect(interrupted.next).toEqual(["ask"]);
    expect(interrupted.tasks[0]?.interrupts.map((i) => i.value)).toEqual(["what is your name?"]);

    const done = await reloaded.invoke(new Command({ resume: "Ada" }), threadConfig(threadId));
    expect(done.log).toEqual(["start", "ask", "hello Ada"]);
    const final = await graphA.getState(threadConfig(threadId));
    expect(final.next).toEqual([]);
    expect(final.values).toEqual({ log: ["start", "ask", "hello Ada"], name: "Ada" });
  });

  it("lists the history newest first, each step pointing at its parent", async () => {
    const threadId = uuidv7();
    await runToEnd(graphA, threadId);
    const snapshots = await history(graphA, threadId);
    expect(snapshots.map((s) => [s.metadata?.source, s.metadata?.step])).toEqual([
      ["loop", 2],
      ["loop", 1],
      ["loop", 0],
      ["input", -1],
    ]);
    for (let i = 0; i < snapshots.length - 1; i++) {
      expect(snapshots[i]?.parentConfig?.configurable?.checkpoint_id).toBe(
        snapshots[i + 1]?.config.configurable?.checkpoint_id,
      );
    }
    expect(snapshots.at(-1)?.parentConfig).toBeUndefined();
    // Time travel: the state at the interrupt is still readable by its checkpoint id.
    const atInterrupt = await graphA.getState(snapshots[2]!.config);
    expect(atInterrupt.values).toEqual({ log: ["start"] });
    expect(atInterrupt.next).toEqual(["ask"]);
  });

  it("records a manual update as a new checkpoint", async () => {
    const threadId = uuidv7();
    await runToEnd(graphA, threadId);
    await graphA.updateState(threadConfig(threadId), { log: ["edited"] }, "greet");
    const state = await graphA.getState(threadConfig(threadId));
    expect(state.values.log).toEqual(["start", "ask", "hello Ada", "edited"]);
    expect(state.metadata?.source).toBe("update");
    expect(await history(graphA, threadId)).toHaveLength(5);
  });

  it("keeps workspaces apart, even for the same thread id", async () => {
    const threadId = uuidv7();
    await runToEnd(graphA, threadId);
    const saverB = new PostgresCheckpointer(database().sql, workspaceB);
    expect(await saverB.getTuple(threadConfig(threadId))).toBeUndefined();
    const listedByB = [];
    for await (const t of saverB.list({})) listedByB.push(t.config.configurable?.thread_id);
    expect(listedByB).not.toContain(threadId);

    // B runs its own thread under the same id; A's is untouched, and B deleting it leaves A's.
    await graphB.invoke({ log: ["b"] }, threadConfig(threadId));
    expect((await graphB.getState(threadConfig(threadId))).values.log).toEqual(["b"]);
    await saverB.deleteThread(threadId);
    expect(await saverB.getTuple(threadConfig(threadId))).toBeUndefined();
    expect((await graphA.getState(threadConfig(threadId))).values.log).toEqual(["start", "ask", "hello Ada"]);

    // The thread helpers are scoped too.
    expect(await pruneThreadCheckpoints(database().sql, workspaceB, [threadId], "keep_latest")).toBe(0);
    expect(await copyThreadCheckpoints(database().sql, workspaceB, threadId, uuidv7())).toBe(0);
    expect(await deleteThreadCheckpoints(database().sql, workspaceB, [threadId])).toBe(0);
    expect(await history(graphA, threadId)).toHaveLength(4);
  });

  it("copies a thread with its history and pending writes, independent of the original", async () => {
    const threadId = uuidv7();
    const copyId = uuidv7();
    await graphA.invoke({ log: ["start"] }, threadConfig(threadId));
    // Up to the interrupt: the input checkpoint and the first loop step, whose writes hold the interrupt.
    expect(await copyThreadCheckpoints(database().sql, workspaceA, threadId, copyId)).toBe(2);

    const copied = await graphA.getState(threadConfig(copyId));
    expect(copied.next).toEqual(["ask"]);
    expect(copied.tasks[0]?.interrupts.map((i) => i.value)).toEqual(["what is your name?"]);
    expect(await history(graphA, copyId)).toHaveLength(2);

    const done = await graphA.invoke(new Command({ resume: "Copy" }), threadConfig(copyId));
    expect(done.log).toEqual(["start", "ask", "hello Copy"]);
    expect((await graphA.getState(threadConfig(threadId))).next).toEqual(["ask"]);
  });

  it("prunes to the latest checkpoint, keeping the state", async () => {
    const threadId = uuidv7();
    const untouched = uuidv7();
    await runToEnd(graphA, threadId);
    await runToEnd(graphA, untouched);
    const before = await graphA.getState(threadConfig(threadId));
    const blobsBefore = await countRows(database().sql, "checkpoint_blobs", threadId);
    expect(await blobsNotNamedByLatest(database().sql, threadId)).toBeGreaterThan(0);

    expect(
      await pruneThreadCheckpoints(database().sql, workspaceA, [threadId, uuidv7()], "keep_latest"),
    ).toBe(1);
    const snapshots = await history(graphA, threadId);
    expect(snapshots).toHaveLength(1);
    expect(snapshots[0]?.values).toEqual(before.values);
    expect(snapshots[0]?.config.configurable?.checkpoint_id).toBe(before.config.configurable?.checkpoint_id);
    expect(snapshots[0]?.parentConfig).toBeUndefined();
    // Only the channel values the kept checkpoint names survive.
    expect(await countRows(database().sql, "checkpoint_blobs", threadId)).toBeLessThan(blobsBefore);
    expect(await blobsNotNamedByLatest(database().sql, threadId)).toBe(0);
    expect(await countRows(database().sql, "checkpoints", threadId)).toBe(1);
    expect(await history(graphA, untouched)).toHaveLength(4);

    // The pruned thread keeps working from its latest state.
    await graphA.invoke({ log: ["again"] }, threadConfig(threadId));
    expect((await graphA.getState(threadConfig(threadId))).values.log).toEqual([
      "start",
      "ask",
      "hello Ada",
      "again",
    ]);
  });

  it("deletes threads with everything they stored", async () => {
    const threadId = uuidv7();
    await graphA.invoke({ log: ["start"] }, threadConfig(threadId));
    expect(await countRows(database().sql, "checkpoint_writes", threadId)).toBeGreaterThan(0);
    expect(await pruneThreadCheckpoints(database().sql, workspaceA, [threadId], "delete")).toBe(1);
    for (const table of ["checkpoints", "checkpoint_blobs", "checkpoint_writes"] as const) {
      expect(await countRows(database().sql, table, threadId)).toBe(0);
    }
    expect((await graphA.getState(threadConfig(threadId))).values).toEqual({});
  });

  it("stores run metadata but strips auth users, headers and request ids", async () => {
    const threadId = uuidv7();
    await graphA.invoke(
      { log: ["start"] },
      {
        configurable: { thread_id: threadId, langgraph_auth_user: "alice", "x-api-key": "secret" },
        metadata: {
          run_id: "run-1",
          graph_id: "greeter",
          langgraph_auth_user_id: "alice",
          "x-request-id": "req-1",
          agentplane_request_id: "req-2",
          nested: { too: "big" },
        },
      },
    );
    const state = await graphA.getState(threadConfig(threadId));
    expect(state.metadata).toMatchObject({ run_id: "run-1", graph_id: "greeter", source: "loop" });
    const keys = Object.keys(state.metadata ?? {});
    for (const key of ["langgraph_auth_user", "langgraph_auth_user_id", "x-api-key", "x-request-id"]) {
      expect(keys).not.toContain(key);
    }
    expect(keys).not.toContain("agentplane_request_id");
    expect(keys).not.toContain("nested");
    // History can be filtered by run metadata (jsonb containment).
    const byRun = [];
    for await (const s of graphA.getStateHistory(threadConfig(threadId), { filter: { run_id: "run-1" } })) {
      byRun.push(s);
    }
    expect(byRun.length).toBeGreaterThan(0);
    const none = graphA.getStateHistory(threadConfig(threadId), { filter: { run_id: "other" } });
    expect((await none.next()).done).toBe(true);
  });

  it("stores metadata holding NUL characters, which jsonb cannot, without them", async () => {
    const saver = new PostgresCheckpointer(database().sql, workspaceA);
    const config = await saver.put(
      { configurable: { thread_id: uuidv7() } },
      emptyCheckpoint(),
      { source: "update", step: -1, parents: {}, note: "a\u0000b\\u0000" } as CheckpointMetadata,
      {},
    );
    expect((await saver.getTuple(config))?.metadata).toMatchObject({ note: "ab\\u0000" });
  });

  it("reports what a thread stores", async () => {
    const threadId = uuidv7();
    await graphA.invoke({ log: ["start"] }, threadConfig(threadId));
    const storage = await threadCheckpointStorage(database().sql, workspaceA, threadId);
    expect(storage.checkpoints.count).toBe(2);
    expect(storage.pendingWrites.count).toBeGreaterThan(0);
    expect(Object.keys(storage.channelValues.byChannel)).toContain("log");
    expect(storage.totalBytes).toBe(
      storage.checkpoints.bytes + storage.channelValues.bytes + storage.pendingWrites.bytes,
    );
    expect(storage.totalBytes).toBeGreaterThan(0);
    const empty = await threadCheckpointStorage(database().sql, workspaceB, threadId);
    expect(empty.totalBytes).toBe(0);
  });
});

describe("PostgresCheckpointer.prefetchLatest", () => {
  let workspace = "";
  beforeAll(async () => {
    workspace = await createTestWorkspace(database().sql);
  });

  /** A thread stopped at its interrupt, written through a saver of its own. */
  async function interruptedThread(): Promise<string> {
    const threadId = uuidv7();
    await compileGraph(new PostgresCheckpointer(database().sql, workspace)).invoke(
      { log: ["start"] },
      threadConfig(threadId),
    );
    return threadId;
  }

  /**
   * Runs `body` with a saver on one reserved connection that prefetched a new thread (no checkpoint
   * yet) and whose read is over: the connection runs its statements in order, so the prefetch's
   * read (one statement) has answered once a later statement on it answers.
   */
  async function withSettledPrefetch(
    body: (saver: PostgresCheckpointer, threadId: string) => Promise<void>,
  ): Promise<void> {
    const connection = await database().sql.reserve();
    try {
      const threadId = uuidv7();
      const saver = new PostgresCheckpointer(connection, workspace);
      saver.prefetchLatest(threadId);
      await connection`select 1`;
      await body(saver, threadId);
    } finally {
      connection.release();
    }
  }

  it("answers the next getTuple of the thread's root from the read it started, once", async () => {
    await withSettledPrefetch(async (saver, threadId) => {
      // Another saver writes the thread's first checkpoint after the read found none.
      const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1) };
      await new PostgresCheckpointer(database().sql, workspace).put(
        threadConfig(threadId),
        checkpoint,
        { source: "update", step: 0, parents: {} } as CheckpointMetadata,
        {},
      );
      expect(await saver.getTuple(threadConfig(threadId))).toBeUndefined();
      expect((await saver.getTuple(threadConfig(threadId)))?.checkpoint.id).toBe(checkpoint.id);
    });
  });

  it("runs a graph from the prefetched checkpoint as from a read of its own", async () => {
    const threadId = await interruptedThread();
    const saver = new PostgresCheckpointer(database().sql, workspace);
    saver.prefetchLatest(threadId);
    const done = await compileGraph(saver).invoke(new Command({ resume: "Ada" }), threadConfig(threadId));
    expect(done.log).toEqual(["start", "ask", "hello Ada"]);
  });

  it("is dropped by a write through the saver: checkpoints and pending writes alike", async () => {
    const metadata = { source: "update", step: 0, parents: {} } as CheckpointMetadata;
    for (const write of ["put", "putWrites"] as const) {
      await withSettledPrefetch(async (saver, threadId) => {
        // The thread gets a checkpoint after the read found none.
        const other = new PostgresCheckpointer(database().sql, workspace);
        const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1) };
        await other.put(threadConfig(threadId), checkpoint, metadata, {});
        // A write of another thread through the saver: the prefetched read no longer answers.
        if (write === "put") await saver.put(threadConfig(uuidv7()), emptyCheckpoint(), metadata, {});
        else {
          const elsewhere = await other.put(threadConfig(uuidv7()), emptyCheckpoint(), metadata, {});
          await saver.putWrites(elsewhere, [["log", ["written"]]], "task-1");
        }
        expect((await saver.getTuple(threadConfig(threadId)))?.checkpoint.id).toBe(checkpoint.id);
      });
    }
  });

  it("leaves reads of a checkpoint id, another namespace or another thread to themselves", async () => {
    const threadId = await interruptedThread();
    // One connection: its statements run in order, so the prefetch's read is over once the reads
    // started after it have answered.
    const connection = await database().sql.reserve();
    try {
      const saver = new PostgresCheckpointer(connection, workspace);
      const latest = await saver.getTuple(threadConfig(threadId));
      const parentId = latest?.parentConfig?.configurable?.checkpoint_id as string;
      saver.prefetchLatest(threadId);
      const parent = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_id: parentId } });
      expect(parent?.checkpoint.id).toBe(parentId);
      expect(
        await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "sub:1" } }),
      ).toBeUndefined();
      expect(await saver.getTuple(threadConfig(uuidv7()))).toBeUndefined();
      // The prefetched read still answers for the root of its thread.
      await compileGraph(new PostgresCheckpointer(database().sql, workspace)).updateState(
        threadConfig(threadId),
        { log: ["edited"] },
      );
      expect((await saver.getTuple(threadConfig(threadId)))?.checkpoint.id).toBe(latest?.checkpoint.id);
    } finally {
      connection.release();
    }
  });
});

describe("PostgresCheckpointer with writesAfter", () => {
  /** Lets `hops` rounds of queued microtasks run: what a graph does within one turn. */
  async function sameTurn(hops = 50): Promise<void> {
    for (let i = 0; i < hops; i++) await Promise.resolve();
  }

  it("sends a write's statement after what the same turn sends, and stores the same", async () => {
    const workspace = await createTestWorkspace(database().sql);
    // One connection: its statements run in the order they are sent.
    const connection = await database().sql.reserve();
    try {
      const saver = new PostgresCheckpointer(connection, workspace, { writesAfter: async () => {} });
      const threadId = uuidv7();
      const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1) };
      const metadata = { source: "update", step: 0, parents: {} } as CheckpointMetadata;
      const counts = () =>
        connection<{ checkpoints: number; writes: number }[]>`
          select (select count(*)::int from checkpoints where thread_id = ${threadId}) as checkpoints,
                 (select count(*)::int from checkpoint_writes where thread_id = ${threadId}) as writes`;

      const put = saver.put(threadConfig(threadId), checkpoint, metadata, {});
      await sameTurn();
      expect((await counts())[0]).toEqual({ checkpoints: 0, writes: 0 });
      const config = await put;

      const written = saver.putWrites(config, [["log", ["written"]]], "task-1");
      await sameTurn();
      expect((await counts())[0]).toEqual({ checkpoints: 1, writes: 0 });
      await written;

      const stored = await saver.getTuple(threadConfig(threadId));
      expect(stored?.checkpoint.id).toBe(checkpoint.id);
      expect(stored?.pendingWrites).toEqual([["task-1", "log", ["written"]]]);
    } finally {
      connection.release();
    }
  });

  it("sends a write's statement only once writesAfter resolves", async () => {
    const workspace = await createTestWorkspace(database().sql);
    let open: () => void = () => {};
    let asked: () => void = () => {};
    const waiting = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const saver = new PostgresCheckpointer(database().sql, workspace, {
      writesAfter: () => {
        asked();
        return new Promise<void>((resolve) => {
          open = resolve;
        });
      },
    });
    const threadId = uuidv7();
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1) };
    const metadata = { source: "update", step: 0, parents: {} } as CheckpointMetadata;
    const stored = async () =>
      (
        await database().sql<{ n: number }[]>`
          select count(*)::int as n from checkpoints where thread_id = ${threadId}`
      )[0]?.n;

    const put = saver.put(threadConfig(threadId), checkpoint, metadata, {});
    // The write waits for writesAfter, with nothing sent.
    await waiting;
    expect(await stored()).toBe(0);
    open();
    await put;
    expect(await stored()).toBe(1);
  });

  it("runs a graph to the same checkpoints as a saver that writes at once", async () => {
    const workspace = await createTestWorkspace(database().sql);
    const shapes = async (deferred: boolean) => {
      const graph = compileGraph(
        new PostgresCheckpointer(database().sql, workspace, deferred ? { writesAfter: async () => {} } : {}),
      );
      const threadId = uuidv7();
      await runToEnd(graph, threadId);
      // Read back through a saver of its own, as another process would.
      const reread = compileGraph(new PostgresCheckpointer(database().sql, workspace));
      return (await history(reread, threadId)).map((s) => ({
        values: s.values,
        next: s.next,
        step: s.metadata?.step,
        source: s.metadata?.source,
        interrupts: s.tasks.flatMap((t) => t.interrupts.map((i) => i.value)),
      }));
    };
    const deferred = await shapes(true);
    expect(deferred[0]?.values).toEqual({ log: ["start", "ask", "hello Ada"], name: "Ada" });
    expect(deferred).toEqual(await shapes(false));
  });
});
