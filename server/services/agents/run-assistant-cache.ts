/**
 * The assistants stateless runs were made from lately, kept so that the next run of the same
 * assistant needs no read of it: a stateless run's creation is then one statement.
 *
 * Invariants:
 * - a run is never created from an assistant that changed or went: a run made from a kept record
 *   is inserted only if the assistant's row is still at the version read (the insert checks it,
 *   store/agents/agent-run-store.ts), and otherwise the record is dropped, read afresh and the creation
 *   retried once;
 * - only lookups without custom auth's visibility filter are kept (a filter is the caller's);
 * - at most {@link MAX_KEPT} assistants are kept, the least recently used dropped first.
 */
import {
  type AssistantRecord,
  findVersionedAssistant,
  type VersionedAssistant,
} from "../../store/agents/assistant-store.js";
import type { Queryable } from "../../store/db.js";
import {
  type AssistantLookup,
  assistantNotFound,
  findRunAssistant,
  type RunAssistantDeps,
} from "./run-assistant.js";

/** Assistants kept: each a few KB; a process serves runs of a few graphs' system assistants, mostly. */
const MAX_KEPT = 1_000;

/** An assistant to make a run from, and the row version its insert checks (none: not to check). */
export interface RunAssistant {
  assistant: AssistantRecord;
  rowVersion: string | undefined;
}

/** The kept assistants of a process. */
export interface RunAssistantCache {
  /** The assistant of `lookup`: kept, or read (`fresh`: read even when kept); NOT_FOUND naming `raw`. */
  get(workspaceId: string, lookup: AssistantLookup, raw: string, fresh: boolean): Promise<RunAssistant>;
  /** Drops the kept record (the assistant changed since it was read). */
  forget(workspaceId: string, assistantId: string): void;
}

/** A new cache reading on `sql`. */
export function createRunAssistantCache(
  sql: Queryable,
  deps: Pick<RunAssistantDeps, "graphIds">,
): RunAssistantCache {
  const kept = new Map<string, VersionedAssistant>();
  const keyOf = (workspaceId: string, assistantId: string) => `${workspaceId}/${assistantId}`;
  return {
    async get(workspaceId, lookup, raw, fresh) {
      if (lookup.visible)
        return {
          assistant: await findRunAssistant(sql, deps, workspaceId, lookup, raw),
          rowVersion: undefined,
        };
      const key = keyOf(workspaceId, lookup.id);
      const found = fresh ? undefined : kept.get(key);
      if (found) {
        // Most recently used last: a Map iterates in insertion order.
        kept.delete(key);
        kept.set(key, found);
        return found;
      }
      const read = await findVersionedAssistant(sql, workspaceId, lookup.id);
      if (!read) {
        kept.delete(key);
        throw assistantNotFound(deps, raw);
      }
      kept.delete(key);
      kept.set(key, read);
      if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value ?? key);
      return read;
    },
    forget(workspaceId, assistantId) {
      kept.delete(keyOf(workspaceId, assistantId));
    },
  };
}
