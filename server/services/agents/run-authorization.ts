import type { JsonObject } from "@bufbuild/protobuf";
import type { WebhookSettings } from "../../config.js";
import { webhookTargetProblem } from "../../net/webhook-target.js";
import type { AuthFilter } from "../../store/filters/auth-filter-sql.js";
import { authorizeEvent, type Principal } from "../iam/principal.js";
import { invalid } from "../request-validation.js";
import type { RunRequest } from "./run-requests.js";
import { handlerMetadata } from "./thread-access.js";

/** Where a run goes: an existing (or to be created) thread, or a new temporary one. */
export type RunTarget =
  | {
      kind: "thread";
      threadId: string;
      /** Custom auth's filter: a thread whose metadata fails it is not found. */
      auth?: AuthFilter;
      /** Metadata a thread created by `if_not_exists: "create"` gets besides its graph's ids. */
      newThreadMetadata?: JsonObject;
    }
  | {
      kind: "stateless";
      /** Metadata its new thread gets besides its graph's ids (custom auth's, so its filter passes). */
      newThreadMetadata?: JsonObject;
    };

/**
 * Refuses (422) a webhook this server would not call: not an absolute http(s) URL, a host off the
 * allow list, or a host that is (or resolves to) an address the SSRF policy refuses. With webhooks
 * disabled nothing is called, so nothing is checked beyond the URL's form. Run creation calls it;
 * whatever stores a run payload for later (a cron) can call it up front with the same answer.
 */
export async function checkWebhook(webhook: string | null, settings: WebhookSettings): Promise<void> {
  if (webhook === null || !settings.enabled) return;
  const problem = await webhookTargetProblem(webhook, settings);
  if (problem) throw invalid(problem.message);
}

/**
 * Custom auth's `threads:create_run` for a run: the handler sees the run (a stateless run has no
 * thread id) and may change its metadata, which the run then stores (and a thread the run creates
 * gets, a stateless run's included); its filter must pass the run's thread.
 */
export async function authorizeRun(
  principal: Principal,
  target: RunTarget,
  request: RunRequest,
): Promise<{ target: RunTarget; request: RunRequest }> {
  if (!principal.authRules) return { target, request };
  const value: Record<string, unknown> = {
    thread_id: target.kind === "thread" ? target.threadId : undefined,
    assistant_id: request.assistantId,
    run_id: undefined,
    status: "pending",
    metadata: { ...request.metadata },
    prevent_insert_if_inflight: undefined,
    multitask_strategy: request.multitaskStrategy,
    if_not_exists: request.ifNotExists,
    after_seconds: request.afterSeconds,
    kwargs: {
      input: request.input,
      command: request.command,
      config: request.config,
      context: request.context,
      stream_mode: request.streamModes,
      webhook: request.webhook,
    },
  };
  const auth = await authorizeEvent(principal, "threads:create_run", value);
  const metadata = handlerMetadata(value, "threads:create_run");
  const authorized = { ...request, metadata };
  // A stateless run's thread carries the metadata too, so the handler's filter finds it when the
  // caller joins the run's stream (as the LangGraph JS server's temporary threads do).
  if (target.kind === "stateless")
    return { target: { ...target, newThreadMetadata: metadata }, request: authorized };
  return {
    target: { ...target, ...(auth ? { auth } : {}), newThreadMetadata: metadata },
    request: authorized,
  };
}
