import { setImmediate as nextTurn } from "node:timers/promises";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  getCheckpointId,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
} from "@langchain/langgraph-checkpoint";
import { isUuid } from "../ids.js";
import {
  type BlobRecord,
  type CheckpointKey,
  type CheckpointRecord,
  findCheckpointWithValues,
  insertCheckpoint,
  insertWrites,
  listCheckpointBlobs,
  listCheckpoints,
  listCheckpointWrites,
  type SerializedBlob,
  type SerializedWrite,
  type WriteRecord,
} from "../store/agents/checkpoint-store.js";
import { deleteThreadCheckpoints } from "../store/agents/checkpoint-thread-store.js";
import type { StoredDataCipher } from "../store/crypto/stored-data-cipher.js";
import { type Queryable, storedCipherOf } from "../store/db.js";
import { checkpointMetadataToStore } from "./checkpoint-metadata.js";

export {
  type CheckpointPruneStrategy,
  copyThreadCheckpoints,
  deleteThreadCheckpoints,
  pruneThreadCheckpoints,
  type ThreadCheckpointStorage,
  threadCheckpointStorage,
} from "../store/agents/checkpoint-thread-store.js";

/** Options of {@link PostgresCheckpointer}. */
export interface PostgresCheckpointerOptions {
  /** Serializer of checkpoints, channel values and writes; LangGraph's JsonPlusSerializer by default. */
  serde?: SerializerProtocol;
  /**
   * Writes (`put`, `putWrites`) send their statement in the event loop's next turn rather than at
   * once (they still serialise their values at once, as the graph hands them over), and then only
   * once `writesAfter` resolves: for a graph run whose durability does not wait for them (`async`,
   * LangGraph's default, or `exit`), so what the run sends in the same turn goes first. A graph's
   * step puts its checkpoint and writes in the turn that emits the step's chunk; the run passes
   * "once the event statement in flight is answered", so the chunk's event reaches Postgres ahead
   * of the checkpoint's statements and is stored without them competing for its CPU. What is
   * stored, and in which order, is the same.
   */
  writesAfter?: () => Promise<unknown>;
}

/**
 * Checkpoints loaded per batch of `list`: bounds the channel values deserialized at once while a
 * caller walks a long history, at one pair of extra queries per batch.
 */
const LIST_BATCH_SIZE = 100;

/** Checkpoint format version that moved pending sends from parent writes into channel values. */
const PENDING_SENDS_FORMAT_VERSION = 4;

/** Matches `\u0000` escapes (not preceded by an escaping backslash), which jsonb cannot hold. */
const JSON_NUL_ESCAPE = /(?<!\\)((?:\\\\)*)\\u0000/g;

const textDecoder = new TextDecoder();

function keyOf(key: CheckpointKey): string {
  return JSON.stringify([key.threadId, key.checkpointNs, key.checkpointId]);
}

function configOf(threadId: string, checkpointNs: string, checkpointId: string): RunnableConfig {
  return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpointId } };
}

function requireString(value: unknown, field: string, operation: string): string {
  if (typeof value !== "string") {
    throw new Error(`${operation}: config.configurable.${field} must be a string (got ${typeof value})`);
  }
  return value;
}

/**
 * LangGraph checkpoint saver on Postgres, scoped to one workspace: every statement filters by the
 * workspace id, so a saver never reads or changes another workspace's threads.
 *
 * Storage (migration 0003): the checkpoint without its channel values, each channel value once per
 * (channel, version) (only the channels in `newVersions` are written by `put`), and the pending
 * writes of tasks. Everything is serialized before any statement runs, and each operation is a
 * single statement, so no transaction stays open while JavaScript works.
 *
 * Metadata: see {@link checkpointMetadataToStore} for what is kept.
 *
 * Encryption at rest (when the pool has a cipher): checkpoints, channel values and pending writes
 * are sealed whole, since they are opaque bytes nothing queries, and sealing whole also covers
 * values under channel names (a `messages` channel is not a JSON key inside its blob). Metadata stays
 * JSON with its allowlisted keys encrypted, so history can still filter on the other keys.
 */
export class PostgresCheckpointer extends BaseCheckpointSaver {
  readonly #sql: Queryable;
  readonly #workspaceId: string;
  readonly #cipher: StoredDataCipher | undefined;
  readonly #writesAfter: (() => Promise<unknown>) | undefined;
  /** The read {@link prefetchLatest} started, until a `getTuple` takes it or this saver writes. */
  #prefetched: { threadId: string; tuple: Promise<CheckpointTuple | undefined> } | undefined;

  /**
   * @param sql Pool, reserved connection or open transaction to run statements on.
   * @param workspaceId The workspace whose checkpoints this saver reads and writes.
   */
  constructor(sql: Queryable, workspaceId: string, options: PostgresCheckpointerOptions = {}) {
    super(options.serde);
    if (!isUuid(workspaceId))
      throw new Error(`PostgresCheckpointer: workspace id ${workspaceId} is not a UUID`);
    this.#sql = sql;
    this.#workspaceId = workspaceId;
    this.#cipher = storedCipherOf(sql);
    this.#writesAfter = options.writesAfter;
  }

  /** Resolves when a write may send its statement: in the next turn, once `writesAfter` resolves. */
  async #writesMayGo(writesAfter: () => Promise<unknown>): Promise<void> {
    await nextTurn();
    await writesAfter();
  }

  /** Serializes `value`, sealed when encryption at rest is on. */
  async #dump(value: unknown): Promise<[string, Uint8Array]> {
    const [type, bytes] = await this.serde.dumpsTyped(value);
    return this.#cipher ? this.#cipher.sealBlob(type, bytes) : [type, bytes];
  }

  /** Deserializes what {@link #dump} wrote (or what was stored before encryption was on). */
  async #load(type: string, bytes: Uint8Array): Promise<unknown> {
    const [plainType, plain] = this.#cipher ? this.#cipher.openBlob(type, bytes) : [type, bytes];
    return this.serde.loadsTyped(plainType, plain);
  }

  /**
   * Starts reading the newest checkpoint of `threadId`'s root namespace now, for a run about to
   * execute on the thread: the run holds the thread, so only this saver could write its checkpoints
   * meanwhile. The next `getTuple` asking for exactly that (no checkpoint id) answers from this
   * read, so its round trips travel while the graph is loaded and its stream set up. Any write
   * through this saver drops the read unused; later `getTuple` calls read afresh.
   */
  prefetchLatest(threadId: string): void {
    const tuple = this.#readTuple(threadId, "", undefined);
    // A failure reaches the getTuple that takes the read; one never taken is not an error.
    tuple.catch(() => {});
    this.#prefetched = { threadId, tuple };
  }

  /** The checkpoint named by `config` (its id, or the newest of the thread and namespace). */
  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id;
    if (threadId === undefined) return undefined;
    const checkpointNs: string = config.configurable?.checkpoint_ns ?? "";
    const checkpointId = getCheckpointId(config) || undefined;
    const prefetched = this.#prefetched;
    if (prefetched && prefetched.threadId === threadId && checkpointNs === "" && checkpointId === undefined) {
      this.#prefetched = undefined;
      return prefetched.tuple;
    }
    return this.#readTuple(requireString(threadId, "thread_id", "getTuple"), checkpointNs, checkpointId);
  }

  /**
   * Reads one checkpoint tuple: the one of `checkpointId`, or the newest of the thread and
   * namespace, with its channel values and writes, in one statement.
   */
  async #readTuple(
    threadId: string,
    checkpointNs: string,
    checkpointId: string | undefined,
  ): Promise<CheckpointTuple | undefined> {
    const found = await findCheckpointWithValues(
      this.#sql,
      this.#workspaceId,
      threadId,
      checkpointNs,
      checkpointId,
    );
    if (!found) return undefined;
    const [tuple] = await this.#assemble([found.record], found.blobs, found.writes);
    return tuple;
  }

  /**
   * Checkpoints newest first. An unset `thread_id` lists every thread of the workspace and an unset
   * `checkpoint_ns` every namespace; `filter` keeps checkpoints whose metadata contains it (`@>`).
   */
  override async *list(
    config: RunnableConfig,
    options?: CheckpointListOptions,
  ): AsyncGenerator<CheckpointTuple> {
    const { before, limit, filter } = options ?? {};
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0)) {
      throw new Error(`list: limit must be a non-negative integer (got ${limit})`);
    }
    const configurable = config.configurable ?? {};
    const records = await listCheckpoints(this.#sql, this.#workspaceId, {
      ...(configurable.thread_id !== undefined && {
        threadId: requireString(configurable.thread_id, "thread_id", "list"),
      }),
      ...(configurable.checkpoint_ns != null && {
        checkpointNs: requireString(configurable.checkpoint_ns, "checkpoint_ns", "list"),
      }),
      ...(configurable.checkpoint_id && { checkpointId: String(configurable.checkpoint_id) }),
      ...(before?.configurable?.checkpoint_id !== undefined && {
        beforeCheckpointId: String(before.configurable.checkpoint_id),
      }),
      ...(filter !== undefined &&
        Object.keys(filter).length > 0 && { metadataFilterJson: JSON.stringify(filter) }),
      ...(limit !== undefined && { limit }),
    });
    for (let start = 0; start < records.length; start += LIST_BATCH_SIZE) {
      yield* await this.#toTuples(records.slice(start, start + LIST_BATCH_SIZE));
    }
  }

  /**
   * Stores a checkpoint under the thread and namespace of `config`, with `config`'s checkpoint id as
   * its parent, and the values of the channels in `newVersions`. Returns the new checkpoint's config.
   */
  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    if (config.configurable === undefined) throw new Error("put: config.configurable is missing");
    this.#prefetched = undefined;
    const threadId = requireString(config.configurable.thread_id, "thread_id", "put");
    const checkpointNs: string = config.configurable.checkpoint_ns ?? "";
    const parentCheckpointId: string | undefined = config.configurable.checkpoint_id || undefined;
    const { channel_values, ...withoutValues } = checkpoint;
    const values = channel_values ?? {};
    const blobs = await Promise.all(
      Object.entries(newVersions).map(async ([channel, version]): Promise<SerializedBlob> => {
        if (!Object.hasOwn(values, channel))
          return { channel, version: String(version), type: "empty", value: null };
        const [type, value] = await this.#dump(values[channel]);
        return { channel, version: String(version), type, value };
      }),
    );
    const [[type, serialized], [, metadataBytes]] = await Promise.all([
      this.#dump(withoutValues),
      this.serde.dumpsTyped(checkpointMetadataToStore(metadata, config.metadata)),
    ]);
    if (this.#writesAfter) await this.#writesMayGo(this.#writesAfter);
    await insertCheckpoint(
      this.#sql,
      this.#workspaceId,
      {
        threadId,
        checkpointNs,
        checkpointId: checkpoint.id,
        parentCheckpointId,
        type,
        checkpoint: serialized,
        channelVersionsJson: JSON.stringify(checkpoint.channel_versions ?? {}),
        metadataJson: this.#encryptMetadata(textDecoder.decode(metadataBytes).replace(JSON_NUL_ESCAPE, "$1")),
      },
      blobs,
    );
    return configOf(threadId, checkpointNs, checkpoint.id);
  }

  /**
   * Stores the writes of a task against the checkpoint of `config`. Ordinary writes are idempotent
   * per (task, position): a retry keeps the first. Writes to the special channels of
   * `WRITES_IDX_MAP` (error, interrupt, resume, scheduled) take a fixed negative slot and replace
   * what was there, as the library's in-memory saver does.
   */
  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string): Promise<void> {
    const threadId = requireString(config.configurable?.thread_id, "thread_id", "putWrites");
    this.#prefetched = undefined;
    const checkpointId = requireString(config.configurable?.checkpoint_id, "checkpoint_id", "putWrites");
    const checkpointNs: string = config.configurable?.checkpoint_ns ?? "";
    const serialized = await Promise.all(
      writes.map(async ([channel, value], position): Promise<SerializedWrite> => {
        const [type, bytes] = await this.#dump(value);
        const idx = Object.hasOwn(WRITES_IDX_MAP, channel) ? (WRITES_IDX_MAP[channel] as number) : position;
        return { idx, channel, type, value: bytes };
      }),
    );
    // One row per slot: a special channel written twice in one batch keeps the last value.
    const bySlot = new Map(serialized.map((w) => [w.idx, w]));
    if (this.#writesAfter) await this.#writesMayGo(this.#writesAfter);
    await insertWrites(this.#sql, this.#workspaceId, { threadId, checkpointNs, checkpointId }, taskId, [
      ...bySlot.values(),
    ]);
  }

  /** Checkpoint metadata JSON as stored: its allowlisted keys encrypted when encryption is on. */
  #encryptMetadata(json: string): string {
    return this.#cipher ? this.#cipher.encryptJsonText(json) : json;
  }

  /** Deletes every checkpoint, channel value and pending write of the thread (all namespaces). */
  override async deleteThread(threadId: string): Promise<void> {
    this.#prefetched = undefined;
    await deleteThreadCheckpoints(this.#sql, this.#workspaceId, [threadId]);
  }

  /** Loads channel values and pending writes of the records and builds their tuples, in order. */
  async #toTuples(records: CheckpointRecord[]): Promise<CheckpointTuple[]> {
    if (records.length === 0) return [];
    const [blobs, writes] = await Promise.all([
      listCheckpointBlobs(this.#sql, this.#workspaceId, records),
      listCheckpointWrites(this.#sql, this.#workspaceId, records),
    ]);
    return this.#assemble(records, blobs, writes);
  }

  /** Builds the tuples of the records, in order, from their channel values and pending writes. */
  async #assemble(
    records: CheckpointRecord[],
    blobs: BlobRecord[],
    writes: WriteRecord[],
  ): Promise<CheckpointTuple[]> {
    const [checkpoints, metadata] = await Promise.all([
      Promise.all(records.map((r) => this.#load(r.type, r.checkpoint) as Promise<Checkpoint>)),
      Promise.all(
        records.map(
          (r) =>
            this.serde.loadsTyped(
              "json",
              this.#cipher ? this.#cipher.decryptJsonText(r.metadataJson) : r.metadataJson,
            ) as Promise<CheckpointMetadata>,
        ),
      ),
    ]);
    const valuesByKey = new Map<string, [string, unknown][]>();
    await Promise.all(
      blobs.map(async (b) => {
        const value = await this.#load(b.type, b.value ?? new Uint8Array());
        const list = valuesByKey.get(keyOf(b)) ?? [];
        list.push([b.channel, value]);
        valuesByKey.set(keyOf(b), list);
      }),
    );
    const writesByKey = await this.#groupWrites(writes);
    const sendsByParent = await this.#pendingSendsOfParents(records, checkpoints);
    return records.map((record, i) => {
      const checkpoint = checkpoints[i] as Checkpoint;
      checkpoint.channel_values = Object.fromEntries(valuesByKey.get(keyOf(record)) ?? []);
      const parentKey =
        record.parentCheckpointId && keyOf({ ...record, checkpointId: record.parentCheckpointId });
      const sends = parentKey ? sendsByParent.get(parentKey) : undefined;
      if (sends) {
        checkpoint.channel_values[TASKS] = sends.map(([, , value]) => value);
        const versions = Object.values(checkpoint.channel_versions);
        checkpoint.channel_versions[TASKS] =
          versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
      }
      const tuple: CheckpointTuple = {
        config: configOf(record.threadId, record.checkpointNs, record.checkpointId),
        checkpoint,
        metadata: metadata[i] as CheckpointMetadata,
        pendingWrites: writesByKey.get(keyOf(record)) ?? [],
      };
      if (record.parentCheckpointId) {
        tuple.parentConfig = configOf(record.threadId, record.checkpointNs, record.parentCheckpointId);
      }
      return tuple;
    });
  }

  /**
   * Checkpoints older than format v4 kept pending sends as writes to their parent; this loads those
   * writes for the records that need them, keyed by parent.
   */
  async #pendingSendsOfParents(
    records: CheckpointRecord[],
    checkpoints: Checkpoint[],
  ): Promise<Map<string, CheckpointPendingWrite[]>> {
    const parents = records.flatMap((record, i): CheckpointKey[] =>
      record.parentCheckpointId &&
      (checkpoints[i]?.v ?? PENDING_SENDS_FORMAT_VERSION) < PENDING_SENDS_FORMAT_VERSION
        ? [{ ...record, checkpointId: record.parentCheckpointId }]
        : [],
    );
    if (parents.length === 0) return new Map();
    const sends = await listCheckpointWrites(this.#sql, this.#workspaceId, parents, TASKS);
    const grouped = await this.#groupWrites(sends);
    for (const parent of parents) if (!grouped.has(keyOf(parent))) grouped.set(keyOf(parent), []);
    return grouped;
  }

  /** Deserializes writes and groups them by checkpoint, keeping their order. */
  async #groupWrites(
    writes: Awaited<ReturnType<typeof listCheckpointWrites>>,
  ): Promise<Map<string, CheckpointPendingWrite[]>> {
    const values = await Promise.all(writes.map((w) => this.#load(w.type, w.value)));
    const grouped = new Map<string, CheckpointPendingWrite[]>();
    writes.forEach((w, i) => {
      const list = grouped.get(keyOf(w)) ?? [];
      list.push([w.taskId, w.channel, values[i]]);
      grouped.set(keyOf(w), list);
    });
    return grouped;
  }
}
