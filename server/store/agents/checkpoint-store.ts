import type { Queryable } from "../db.js";

/** Where a checkpoint lives: a thread and a namespace ("" for the root graph) of one workspace. */
export interface CheckpointKey {
  threadId: string;
  checkpointNs: string;
  checkpointId: string;
}

/** A checkpoint row, already serialized by the saver, as written by {@link insertCheckpoint}. */
export interface NewCheckpointRecord extends CheckpointKey {
  parentCheckpointId: string | undefined;
  /** Serializer type tag of `checkpoint`. */
  type: string;
  /** The serialized checkpoint without its channel values. */
  checkpoint: Uint8Array;
  /** The checkpoint's channel_versions, as JSON text. */
  channelVersionsJson: string;
  /** The metadata, as JSON text (already stripped of what must not be stored). */
  metadataJson: string;
}

/** One serialized channel value; `type` "empty" (and no value) for a channel that was cleared. */
export interface SerializedBlob {
  channel: string;
  version: string;
  type: string;
  value: Uint8Array | null;
}

/** One serialized pending write of a task. */
export interface SerializedWrite {
  /** Position in the task's batch, or the negative slot of a special channel. */
  idx: number;
  channel: string;
  type: string;
  value: Uint8Array;
}

/** A checkpoint row as read back. */
export interface CheckpointRecord extends CheckpointKey {
  parentCheckpointId: string | null;
  type: string;
  checkpoint: Uint8Array;
  /** Metadata as JSON text, for the serializer to revive. */
  metadataJson: string;
}

/** A channel value read back for one checkpoint. */
export interface BlobRecord extends CheckpointKey {
  channel: string;
  type: string;
  value: Uint8Array | null;
}

/** A pending write read back for one checkpoint. */
export interface WriteRecord extends CheckpointKey {
  taskId: string;
  channel: string;
  type: string;
  value: Uint8Array;
}

/** Which checkpoints {@link listCheckpoints} returns; an undefined field does not filter. */
export interface CheckpointQuery {
  threadId?: string;
  checkpointNs?: string;
  checkpointId?: string;
  /** Only checkpoints whose ids sort before this one. */
  beforeCheckpointId?: string;
  /** JSON text of an object the metadata must contain (`@>`). */
  metadataFilterJson?: string;
  limit?: number;
}

interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  type: string;
  checkpoint: Uint8Array;
  metadata: string;
}

/**
 * Byte strings as hex text for an array parameter, decoded with `decode(x, 'hex')` in SQL. JSON and
 * byte arrays go through text on purpose: the driver would JSON-encode a string bound to a jsonb
 * parameter again, and binds a Uint8Array[] as a single bytea.
 */
function hexArray(values: (Uint8Array | null)[]): (string | null)[] {
  return values.map((v) =>
    v === null ? null : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex"),
  );
}

function toRecord(row: CheckpointRow): CheckpointRecord {
  return {
    threadId: row.thread_id,
    checkpointNs: row.checkpoint_ns,
    checkpointId: row.checkpoint_id,
    parentCheckpointId: row.parent_checkpoint_id,
    type: row.type,
    checkpoint: row.checkpoint,
    metadataJson: row.metadata,
  };
}

/**
 * Stores a checkpoint and the channel values that changed with it, in one statement (so atomically).
 * Blobs already stored for a (channel, version) are kept; re-putting a checkpoint id replaces it.
 */
export async function insertCheckpoint(
  q: Queryable,
  workspaceId: string,
  record: NewCheckpointRecord,
  blobs: SerializedBlob[],
): Promise<void> {
  await q`
    with new_blobs as (
      insert into checkpoint_blobs (workspace_id, thread_id, checkpoint_ns, channel, version, type, blob)
      select ${workspaceId}, ${record.threadId}, ${record.checkpointNs}, b.channel, b.version, b.type,
             decode(b.blob, 'hex')
      from unnest(${blobs.map((b) => b.channel)}::text[], ${blobs.map((b) => b.version)}::text[],
                  ${blobs.map((b) => b.type)}::text[], ${hexArray(blobs.map((b) => b.value))}::text[])
           as b (channel, version, type, blob)
      on conflict do nothing
    )
    insert into checkpoints (workspace_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
                             type, checkpoint, channel_versions, metadata)
    values (${workspaceId}, ${record.threadId}, ${record.checkpointNs}, ${record.checkpointId},
            ${record.parentCheckpointId ?? null}, ${record.type}, ${record.checkpoint},
            ${record.channelVersionsJson}::text::jsonb, ${record.metadataJson}::text::jsonb)
    on conflict (workspace_id, thread_id, checkpoint_ns, checkpoint_id) do update
      set parent_checkpoint_id = excluded.parent_checkpoint_id, type = excluded.type,
          checkpoint = excluded.checkpoint, channel_versions = excluded.channel_versions,
          metadata = excluded.metadata`;
}

/**
 * Stores pending writes of a task against a checkpoint. A write whose (task, idx) slot is taken is
 * kept as it was (so a retried batch is a no-op), except in the negative slots of special channels
 * (errors, interrupts, resume values, scheduled), where the newer write replaces the older. A batch
 * must not hold two writes for one slot.
 */
export async function insertWrites(
  q: Queryable,
  workspaceId: string,
  key: CheckpointKey,
  taskId: string,
  writes: SerializedWrite[],
): Promise<void> {
  if (writes.length === 0) return;
  await q`
    insert into checkpoint_writes (workspace_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                                   channel, type, value)
    select ${workspaceId}, ${key.threadId}, ${key.checkpointNs}, ${key.checkpointId}, ${taskId}, w.idx,
           w.channel, w.type, decode(w.value, 'hex')
    from unnest(${writes.map((w) => w.idx)}::int[], ${writes.map((w) => w.channel)}::text[],
                ${writes.map((w) => w.type)}::text[], ${hexArray(writes.map((w) => w.value))}::text[])
         as w (idx, channel, type, value)
    on conflict (workspace_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx) do update
      set channel = excluded.channel, type = excluded.type, value = excluded.value
      where excluded.idx < 0`;
}

/** A checkpoint with its channel values and pending writes, as {@link findCheckpointWithValues} reads them. */
export interface CheckpointWithValues {
  record: CheckpointRecord;
  blobs: BlobRecord[];
  writes: WriteRecord[];
}

/**
 * The checkpoint with this id, or the newest of the thread and namespace when `checkpointId` is
 * unset, with what {@link listCheckpointBlobs} and {@link listCheckpointWrites} would read for it, in
 * one statement (one round trip instead of two): its row, then the rows of its stored channel values,
 * then those of its pending writes (by task id, then position).
 */
export async function findCheckpointWithValues(
  q: Queryable,
  workspaceId: string,
  threadId: string,
  checkpointNs: string,
  checkpointId: string | undefined,
): Promise<CheckpointWithValues | undefined> {
  const rows = await q<
    {
      kind: "c" | "b" | "w";
      checkpoint_id: string;
      parent_checkpoint_id: string | null;
      type: string;
      value: Uint8Array | null;
      metadata: string | null;
      name: string | null;
      task_id: string | null;
    }[]
  >`
    with c as (
      select checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata::text as metadata, channel_versions
      from checkpoints
      where workspace_id = ${workspaceId} and thread_id = ${threadId} and checkpoint_ns = ${checkpointNs}
        ${checkpointId === undefined ? q`` : q`and checkpoint_id = ${checkpointId}`}
      order by checkpoint_id desc
      limit 1
    )
    select 'c' as kind, c.checkpoint_id, c.parent_checkpoint_id, c.type, c.checkpoint as value, c.metadata,
           null::text as name, null::text as task_id, 0 as part, null::int as idx
    from c
    union all
    select 'b', c.checkpoint_id, null, b.type, b.blob, null, b.channel, null, 1, null
    from c
    cross join lateral jsonb_each_text(c.channel_versions) as v (channel, version)
    join checkpoint_blobs b on b.workspace_id = ${workspaceId} and b.thread_id = ${threadId}
      and b.checkpoint_ns = ${checkpointNs} and b.channel = v.channel and b.version = v.version
    where b.type <> 'empty'
    union all
    select 'w', c.checkpoint_id, null, w.type, w.value, null, w.channel, w.task_id, 2, w.idx
    from c
    join checkpoint_writes w on w.workspace_id = ${workspaceId} and w.thread_id = ${threadId}
      and w.checkpoint_ns = ${checkpointNs} and w.checkpoint_id = c.checkpoint_id
    order by part, task_id, idx`;
  const [first, ...rest] = rows;
  if (first?.kind !== "c" || first.value === null) return undefined;
  const key = { threadId, checkpointNs, checkpointId: first.checkpoint_id };
  return {
    record: {
      ...key,
      parentCheckpointId: first.parent_checkpoint_id,
      type: first.type,
      checkpoint: first.value,
      metadataJson: first.metadata ?? "{}",
    },
    blobs: rest
      .filter((r) => r.kind === "b")
      .map((r) => ({ ...key, channel: r.name ?? "", type: r.type, value: r.value })),
    writes: rest
      .filter((r) => r.kind === "w")
      .map((r) => ({
        ...key,
        taskId: r.task_id ?? "",
        channel: r.name ?? "",
        type: r.type,
        value: r.value ?? new Uint8Array(),
      })),
  };
}

/** Checkpoints matching `query`, newest (highest id) first. */
export async function listCheckpoints(
  q: Queryable,
  workspaceId: string,
  query: CheckpointQuery,
): Promise<CheckpointRecord[]> {
  const rows = await q<CheckpointRow[]>`
    select thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
           metadata::text as metadata
    from checkpoints
    where workspace_id = ${workspaceId}
      ${query.threadId === undefined ? q`` : q`and thread_id = ${query.threadId}`}
      ${query.checkpointNs === undefined ? q`` : q`and checkpoint_ns = ${query.checkpointNs}`}
      ${query.checkpointId === undefined ? q`` : q`and checkpoint_id = ${query.checkpointId}`}
      ${query.beforeCheckpointId === undefined ? q`` : q`and checkpoint_id < ${query.beforeCheckpointId}`}
      ${query.metadataFilterJson === undefined ? q`` : q`and metadata @> ${query.metadataFilterJson}::text::jsonb`}
    order by checkpoint_id desc, thread_id, checkpoint_ns
    ${query.limit === undefined ? q`` : q`limit ${query.limit}`}`;
  return rows.map(toRecord);
}

/** The stored channel values (not "empty" markers) named by the channel_versions of each checkpoint. */
export async function listCheckpointBlobs(
  q: Queryable,
  workspaceId: string,
  keys: CheckpointKey[],
): Promise<BlobRecord[]> {
  if (keys.length === 0) return [];
  const rows = await q<
    {
      thread_id: string;
      checkpoint_ns: string;
      checkpoint_id: string;
      channel: string;
      type: string;
      blob: Uint8Array | null;
    }[]
  >`
    select c.thread_id, c.checkpoint_ns, c.checkpoint_id, b.channel, b.type, b.blob
    from unnest(${keys.map((k) => k.threadId)}::text[], ${keys.map((k) => k.checkpointNs)}::text[],
                ${keys.map((k) => k.checkpointId)}::text[]) as k (thread_id, checkpoint_ns, checkpoint_id)
    join checkpoints c on c.workspace_id = ${workspaceId} and c.thread_id = k.thread_id
      and c.checkpoint_ns = k.checkpoint_ns and c.checkpoint_id = k.checkpoint_id
    cross join lateral jsonb_each_text(c.channel_versions) as v (channel, version)
    join checkpoint_blobs b on b.workspace_id = c.workspace_id and b.thread_id = c.thread_id
      and b.checkpoint_ns = c.checkpoint_ns and b.channel = v.channel and b.version = v.version
    where b.type <> 'empty'`;
  return rows.map((r) => ({
    threadId: r.thread_id,
    checkpointNs: r.checkpoint_ns,
    checkpointId: r.checkpoint_id,
    channel: r.channel,
    type: r.type,
    value: r.blob,
  }));
}

/**
 * The pending writes of each checkpoint, by task id then position; with `channel`, only writes to
 * that channel (used to migrate the pending sends of pre-v4 checkpoints).
 */
export async function listCheckpointWrites(
  q: Queryable,
  workspaceId: string,
  keys: CheckpointKey[],
  channel?: string,
): Promise<WriteRecord[]> {
  if (keys.length === 0) return [];
  const rows = await q<
    {
      thread_id: string;
      checkpoint_ns: string;
      checkpoint_id: string;
      task_id: string;
      channel: string;
      type: string;
      value: Uint8Array;
    }[]
  >`
    select w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.channel, w.type, w.value
    from unnest(${keys.map((k) => k.threadId)}::text[], ${keys.map((k) => k.checkpointNs)}::text[],
                ${keys.map((k) => k.checkpointId)}::text[]) as k (thread_id, checkpoint_ns, checkpoint_id)
    join checkpoint_writes w on w.workspace_id = ${workspaceId} and w.thread_id = k.thread_id
      and w.checkpoint_ns = k.checkpoint_ns and w.checkpoint_id = k.checkpoint_id
    ${channel === undefined ? q`` : q`where w.channel = ${channel}`}
    order by w.task_id, w.idx`;
  return rows.map((r) => ({
    threadId: r.thread_id,
    checkpointNs: r.checkpoint_ns,
    checkpointId: r.checkpoint_id,
    taskId: r.task_id,
    channel: r.channel,
    type: r.type,
    value: r.value,
  }));
}
