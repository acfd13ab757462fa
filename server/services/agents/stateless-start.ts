/**
 * The fast path of run creation: a stateless run that may start now, in a free slot of this
 * process, is inserted with its new thread, already claimed, in one statement: no transaction, no
 * queue, no round trip to a worker.
 *
 * Invariants (the tests in test/integration/run-creation.test.ts break when these do):
 * - it is taken only by a stateless run with no `after_seconds`, when this process executes runs
 *   and has a slot for it, reserved before the statement is sent (free at once, or, for a run its
 *   caller waits on, the first one freed within BACKLOG_WAIT_MS: run-creation.ts);
 * - the run's thread is new (a UUIDv7 made here, which no one else knows), so no other run can be
 *   queued on it: the run heads its thread's queue without locking it;
 * - the thread and the run (running, attempt 1, under the slot's lease) are one statement, so
 *   either both exist or neither does;
 * - the slot runs the claimed run once the statement answers, and is given back when it fails;
 * - a run made from a kept assistant (run-assistant-cache.ts) is inserted only while the
 *   assistant's row is at the version read: otherwise nothing is written, the slot is given back,
 *   and the caller retries with the assistant read afresh.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { RunSettings } from "../../config.js";
import { uuidv7 } from "../../ids.js";
import type { LocalRuns, RunSlot } from "../../jobs/agent-run-job.js";
import { BACKLOG_WAIT_MS } from "../../jobs/run-backlog.js";
import type { ConfigurableHeadersConfig } from "../../runtime/graph-config.js";
import {
  type AgentRunRecord,
  insertRunOnNewThread,
  type RunCreator,
} from "../../store/agents/agent-run-store.js";
import type { AssistantRecord } from "../../store/agents/assistant-store.js";
import type { Queryable } from "../../store/db.js";
import type { RunTarget } from "./run-authorization.js";
import { newRunOf } from "./run-new.js";
import type { RunRequest } from "./run-requests.js";
import { startInSlot } from "./slot-start.js";

/** What the fast path needs. */
export interface StatelessStartDeps {
  sql: Queryable;
  settings: Pick<RunSettings, "leaseSeconds">;
  configurableHeaders: ConfigurableHeadersConfig | undefined;
}

/** Whether a run may take the fast path (given a free slot). */
export function startsStatelessHere(target: RunTarget, request: RunRequest): boolean {
  return target.kind === "stateless" && request.afterSeconds === 0 && request.checkpoint === null;
}

/**
 * Creates the stateless run of `request` in `slot`, started; resolves with the run as created
 * (pending, as when a worker claims it a moment later), or undefined (nothing written, the slot
 * given back) when the assistant's row is no longer at `rowVersion`.
 */
export async function startStatelessHere(
  deps: StatelessStartDeps,
  run: {
    workspaceId: string;
    assistant: AssistantRecord;
    rowVersion: string | undefined;
    request: RunRequest;
    headers: Headers;
    creator: RunCreator;
    /** Metadata its new thread gets besides its graph's ids (custom auth's). */
    newThreadMetadata: JsonObject | undefined;
  },
  slot: RunSlot,
): Promise<AgentRunRecord | undefined> {
  const { workspaceId, assistant, request, headers, creator } = run;
  const newRun = newRunOf(deps, {
    workspaceId,
    threadId: uuidv7(),
    thread: undefined,
    stateless: true,
    assistant,
    request,
    headers,
    creator,
  });
  return startInSlot(slot, async () => {
    const { inserted } = await insertRunOnNewThread(
      deps.sql,
      newRun,
      { ...run.newThreadMetadata, graph_id: assistant.graphId, assistant_id: assistant.assistantId },
      {
        claim: { owner: slot.owner, leaseToken: slot.leaseToken, leaseSeconds: deps.settings.leaseSeconds },
        ...(run.rowVersion === undefined ? {} : { assistantRowVersion: run.rowVersion }),
      },
    );
    return inserted;
  });
}

/**
 * A slot of this process for a stateless run on the fast path: a free one now, or, for a run its
 * caller waits on (until `awaitedUntil` aborts), the first one freed within {@link BACKLOG_WAIT_MS}.
 * Canceled, with nothing written, when the caller went away while it waited.
 */
export async function statelessSlot(
  local: LocalRuns | undefined,
  awaitedUntil: AbortSignal | undefined,
): Promise<RunSlot | undefined> {
  const now = local?.reserve();
  if (now || !local || !awaitedUntil) return now;
  const slot = await local.reserveWithin(BACKLOG_WAIT_MS, awaitedUntil);
  if (!slot && awaitedUntil.aborted)
    throw new ConnectError(
      "the client went away before its run was created; nothing was written",
      Code.Canceled,
    );
  return slot;
}
