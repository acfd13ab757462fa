import type { Queryable } from "../db.js";

/** What {@link pruneThreadCheckpoints} removes. */
export type CheckpointPruneStrategy = "delete" | "keep_latest";

/** Byte counts of what a thread's checkpoints occupy (the `ThreadStorage` resource). */
export interface ThreadCheckpointStorage {
  /** Sum of the three byte counts below. */
  totalBytes: number;
  checkpoints: { count: number; bytes: number };
  channelValues: {
    count: number;
    bytes: number;
    /** Per channel: how many versions are stored and their bytes. */
    byChannel: Record<string, { versions: number; bytes: number }>;
  };
  pendingWrites: { count: number; bytes: number };
}

/**
 * Copies every checkpoint, channel value and pending write of `fromThreadId` (all namespaces) to
 * `toThreadId` in one statement, so the copy is all or nothing. Checkpoint ids are kept, so the copy
 * has the same history; a `thread_id` recorded in checkpoint metadata is rewritten to the new
 * thread. Rows the target already has are left alone. Returns the number of checkpoints copied.
 */
export async function copyThreadCheckpoints(
  q: Queryable,
  workspaceId: string,
  fromThreadId: string,
  toThreadId: string,
): Promise<number> {
  const [row] = await q<{ copied: number }[]>`
    with copied_blobs as (
      insert into checkpoint_blobs (workspace_id, thread_id, checkpoint_ns, channel, version, type, blob)
      select workspace_id, ${toThreadId}, checkpoint_ns, channel, version, type, blob
      from checkpoint_blobs where workspace_id = ${workspaceId} and thread_id = ${fromThreadId}
      on conflict do nothing
    ), copied_writes as (
      insert into checkpoint_writes (workspace_id, thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
                                     channel, type, value)
      select workspace_id, ${toThreadId}, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value
      from checkpoint_writes where workspace_id = ${workspaceId} and thread_id = ${fromThreadId}
      on conflict do nothing
    ), copied as (
      insert into checkpoints (workspace_id, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
                               type, checkpoint, channel_versions, metadata, created_at)
      select workspace_id, ${toThreadId}, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint,
             channel_versions,
             case when metadata ->> 'thread_id' = ${fromThreadId}
                  then jsonb_set(metadata, '{thread_id}', to_jsonb(${toThreadId}::text))
                  else metadata end,
             created_at
      from checkpoints where workspace_id = ${workspaceId} and thread_id = ${fromThreadId}
      on conflict do nothing
      returning 1
    )
    select count(*)::int as copied from copied`;
  return row?.copied ?? 0;
}

/**
 * Deletes every checkpoint, channel value and pending write of the threads, in one statement.
 * Returns how many of the threads had checkpoints.
 */
export async function deleteThreadCheckpoints(
  q: Queryable,
  workspaceId: string,
  threadIds: string[],
): Promise<number> {
  if (threadIds.length === 0) return 0;
  const [row] = await q<{ threads: number }[]>`
    with deleted_blobs as (
      delete from checkpoint_blobs where workspace_id = ${workspaceId} and thread_id = any(${threadIds}::text[])
    ), deleted_writes as (
      delete from checkpoint_writes where workspace_id = ${workspaceId} and thread_id = any(${threadIds}::text[])
    ), deleted as (
      delete from checkpoints where workspace_id = ${workspaceId} and thread_id = any(${threadIds}::text[])
      returning thread_id
    )
    select count(distinct thread_id)::int as threads from deleted`;
  return row?.threads ?? 0;
}

/**
 * Prunes the checkpoints of the threads. `delete` removes everything (as
 * {@link deleteThreadCheckpoints}); `keep_latest` keeps, per thread and namespace, only the newest
 * checkpoint with its pending writes and the channel values it names, and clears its parent link
 * (the parent is gone). One statement, so all or nothing. Returns how many of the threads had
 * checkpoints.
 */
export async function pruneThreadCheckpoints(
  q: Queryable,
  workspaceId: string,
  threadIds: string[],
  strategy: CheckpointPruneStrategy,
): Promise<number> {
  if (strategy === "delete") return deleteThreadCheckpoints(q, workspaceId, threadIds);
  if (threadIds.length === 0) return 0;
  const [row] = await q<{ threads: number }[]>`
    with latest as (
      select distinct on (thread_id, checkpoint_ns) thread_id, checkpoint_ns, checkpoint_id, channel_versions
      from checkpoints
      where workspace_id = ${workspaceId} and thread_id = any(${threadIds}::text[])
      order by thread_id, checkpoint_ns, checkpoint_id desc
    ), deleted_checkpoints as (
      delete from checkpoints c
      where c.workspace_id = ${workspaceId} and c.thread_id = any(${threadIds}::text[])
        and not exists (select 1 from latest l where l.thread_id = c.thread_id
                          and l.checkpoint_ns = c.checkpoint_ns and l.checkpoint_id = c.checkpoint_id)
    ), unlinked as (
      update checkpoints c set parent_checkpoint_id = null
      from latest l
      where c.workspace_id = ${workspaceId} and c.thread_id = l.thread_id
        and c.checkpoint_ns = l.checkpoint_ns and c.checkpoint_id = l.checkpoint_id
        and c.parent_checkpoint_id is not null
    ), deleted_writes as (
      delete from checkpoint_writes w
      where w.workspace_id = ${workspaceId} and w.thread_id = any(${threadIds}::text[])
        and not exists (select 1 from latest l where l.thread_id = w.thread_id
                          and l.checkpoint_ns = w.checkpoint_ns and l.checkpoint_id = w.checkpoint_id)
    ), deleted_blobs as (
      delete from checkpoint_blobs b
      where b.workspace_id = ${workspaceId} and b.thread_id = any(${threadIds}::text[])
        and not exists (select 1 from latest l cross join lateral jsonb_each_text(l.channel_versions) v
                        where l.thread_id = b.thread_id and l.checkpoint_ns = b.checkpoint_ns
                          and v.key = b.channel and v.value = b.version)
    )
    select count(distinct thread_id)::int as threads from latest`;
  return row?.threads ?? 0;
}

/** Byte counts of a thread's checkpoints, channel values and pending writes. */
export async function threadCheckpointStorage(
  q: Queryable,
  workspaceId: string,
  threadId: string,
): Promise<ThreadCheckpointStorage> {
  const [[checkpoints], channels, [writes]] = await Promise.all([
    q<{ count: number; bytes: number }[]>`
      select count(*)::int as count,
             coalesce(sum(octet_length(checkpoint) + octet_length(metadata::text)), 0)::float8 as bytes
      from checkpoints where workspace_id = ${workspaceId} and thread_id = ${threadId}`,
    q<{ channel: string; versions: number; bytes: number }[]>`
      select channel, count(*)::int as versions, coalesce(sum(octet_length(blob)), 0)::float8 as bytes
      from checkpoint_blobs where workspace_id = ${workspaceId} and thread_id = ${threadId}
      group by channel order by channel`,
    q<{ count: number; bytes: number }[]>`
      select count(*)::int as count, coalesce(sum(octet_length(value)), 0)::float8 as bytes
      from checkpoint_writes where workspace_id = ${workspaceId} and thread_id = ${threadId}`,
  ]);
  // fromEntries defines own properties, so a channel named "__proto__" stays an ordinary key.
  const byChannel = Object.fromEntries(
    channels.map((c) => [c.channel, { versions: c.versions, bytes: c.bytes }]),
  );
  const channelCount = channels.reduce((n, c) => n + c.versions, 0);
  const channelBytes = channels.reduce((n, c) => n + c.bytes, 0);
  const checkpointPart = checkpoints ?? { count: 0, bytes: 0 };
  const writePart = writes ?? { count: 0, bytes: 0 };
  return {
    totalBytes: checkpointPart.bytes + channelBytes + writePart.bytes,
    checkpoints: checkpointPart,
    channelValues: { count: channelCount, bytes: channelBytes, byChannel },
    pendingWrites: writePart,
  };
}
