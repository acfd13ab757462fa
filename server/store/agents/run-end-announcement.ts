/**
 * What the end of a run announces of the run (migration 0038): the NOTIFY of its end event on the
 * events channel carries `<run> <thread> end <seq> <json>`, the JSON holding every column of the
 * run its end changed. A waiter elsewhere that holds the record as the run was created answers
 * with {@link endedRecordOf} instead of reading the run again.
 *
 * Invariant: the announced fields are all that an end changes in a run's row between its creation
 * and its end as a waiter sees it (status, attempt, cancel action and reason, output, updated_at);
 * the rest of a record is fixed at creation. The JSON is absent when the output does not fit in a
 * NOTIFY, or the run is deleted with its end (its thread was gone): read the run then.
 */

import type { StoredDataCipher } from "../crypto/stored-data-cipher.js";
import type { JsonValue } from "../json-value.js";
import type { AgentRunRecord, CancelAction, RunStatus } from "./agent-run-store.js";

/** The columns of a run its end wrote, as announced. */
export interface RunEndAnnouncement {
  status: RunStatus;
  attempt: number;
  cancelAction: CancelAction | null;
  cancelReason: string | null;
  output: JsonValue;
  updatedAt: Date;
}

/** The statuses a run ends with. */
const ENDED_STATUSES: ReadonlySet<string> = new Set(["error", "success", "timeout", "interrupted"]);

/**
 * Reads the JSON part of an end's NOTIFY; undefined when it is absent or not what migration 0038
 * sends (a waiter then reads the run, as it would without an announcement).
 */
export function parseRunEndAnnouncement(json: string | undefined): RunEndAnnouncement | undefined {
  if (!json) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const updatedAt = typeof v.updated_at === "string" ? new Date(v.updated_at) : undefined;
  if (
    typeof v.status !== "string" ||
    !ENDED_STATUSES.has(v.status) ||
    typeof v.attempt !== "number" ||
    (v.cancel_action !== null && v.cancel_action !== "interrupt" && v.cancel_action !== "rollback") ||
    (v.cancel_reason !== null && typeof v.cancel_reason !== "string") ||
    !("output" in v) ||
    !updatedAt ||
    Number.isNaN(updatedAt.getTime())
  )
    return undefined;
  return {
    status: v.status as RunStatus,
    attempt: v.attempt,
    cancelAction: v.cancel_action as CancelAction | null,
    cancelReason: v.cancel_reason as string | null,
    output: v.output as JsonValue,
    updatedAt,
  };
}

/**
 * The run as its end left it: `created` (its record at creation) with what the end announced. The
 * output is announced as stored: with encryption at rest (`cipher`, the pool's), it is opened here,
 * in the caller's encryption context, as a read of the row through the pool would open it.
 */
export function endedRecordOf(
  created: AgentRunRecord,
  ended: RunEndAnnouncement,
  cipher: StoredDataCipher | undefined,
): AgentRunRecord {
  return {
    ...created,
    status: ended.status,
    attempt: ended.attempt,
    cancelAction: ended.cancelAction,
    cancelReason: ended.cancelReason,
    output: cipher ? (cipher.decryptJson(ended.output) as JsonValue) : ended.output,
    updatedAt: ended.updatedAt,
  };
}
