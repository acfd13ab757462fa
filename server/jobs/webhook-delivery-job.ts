import type { WebhookSettings } from "../config.js";
import type { Logger } from "../logger.js";
import { postWebhook, WebhookTimeout } from "../net/webhook-call.js";
import { webhookPolicy, webhookTargetProblem } from "../net/webhook-target.js";
import { isLoopbackWebhook } from "../net/webhook-url-policy.js";
import type { AgentRunRecord, RunEndTimes, RunStatus } from "../store/agents/agent-run-store.js";
import type { JsonObject, JsonValue } from "../store/agents/thread-store.js";
import type { Queryable } from "../store/db.js";
import { defineJob, type JobDefinition } from "./job-definition.js";
import type { Queue } from "./queue.js";
import { type LoopbackCall, prepareLoopbackCall, type WebhookLoopback } from "./webhook-loopback.js";

/** A webhook owed: where, and the run as it ended (without `webhook_sent_at`, stamped per call). */
export interface WebhookPayload {
  workspaceId: string;
  runId: string;
  url: string;
  body: JsonObject;
}

/**
 * The body a run's webhook receives, as the LangGraph servers send it: the run's fields as the API
 * shows them, its final status, when it started and ended, the thread's values after it (the run's
 * output for a stateless run) and, when it failed, the error message. `webhook_sent_at` is added
 * by each call.
 */
export function webhookBody(
  run: AgentRunRecord,
  end: { status: RunStatus; times: RunEndTimes; values: JsonValue; error: string | undefined },
): JsonObject {
  return {
    run_id: run.runId,
    thread_id: run.threadId,
    assistant_id: run.assistantId,
    created_at: run.createdAt.toISOString(),
    updated_at: end.times.updatedAt.toISOString(),
    status: end.status,
    metadata: run.metadata,
    kwargs: run.kwargs,
    multitask_strategy: run.multitaskStrategy,
    run_started_at: end.times.startedAt?.toISOString() ?? null,
    run_ended_at: end.times.endedAt.toISOString(),
    values: end.values,
    ...(end.error === undefined ? {} : { error: end.error }),
  };
}

/** What owing a webhook needs: the settings (is delivery on?), the job, and the queue to send it on. */
export interface WebhookOwing {
  settings: WebhookSettings;
  job: () => JobDefinition<WebhookPayload>;
  queue: () => Pick<Queue, "enqueue">;
}

/**
 * Owes the webhook of a run that just ended, when it has one and delivery is on: sends the delivery
 * job inside `tx`, the transaction that ends the run, so the webhook is owed exactly when the run's
 * end commits, whatever happens to the process afterwards.
 */
export async function oweWebhook(
  tx: Queryable,
  owing: WebhookOwing,
  run: AgentRunRecord,
  end: Parameters<typeof webhookBody>[1],
): Promise<void> {
  const url = (run.kwargs as { webhook?: unknown }).webhook;
  if (typeof url !== "string" || !owing.settings.enabled) return;
  const payload: WebhookPayload = {
    workspaceId: run.workspaceId,
    runId: run.runId,
    url,
    body: webhookBody(run, end),
  };
  await owing.queue().enqueue(owing.job(), payload, { tx });
}

/** Thrown for a call to retry (5xx, timeout, network error): pg-boss schedules the next attempt. */
class WebhookRetry extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookRetry";
  }
}

/**
 * The job outlives one call by this much, so the call's own timeout always fires first (the margin
 * covers the name lookup and the log line around the call). Kept short: a process that dies mid-call
 * leaves its job active until it expires, and only then can another process call again.
 */
const EXPIRY_MARGIN_SECONDS = 10;
/**
 * Concurrent calls per process: four fetch loops of four jobs each. A batch waits for its slowest
 * call, so a receiver that times out holds at most three others back, for at most its timeout.
 */
const DELIVERY_WORKERS = 4;
const DELIVERY_BATCH = 4;
/**
 * Client errors that mean "later" rather than "never": the receiver timed the request out (408) or
 * is throttling (429). Every other 4xx is the receiver's final word.
 */
const RETRYABLE_CLIENT_STATUSES = new Set([408, 429]);

/** The body sent: every field, or only `allowed` (the graphs file's `webhooks.allowed_fields`). */
function sentBody(body: JsonObject, allowed: readonly string[] | undefined): JsonObject {
  if (!allowed) return body;
  return Object.fromEntries(Object.entries(body).filter(([key]) => allowed.includes(key)));
}

/** Whether `error` (or its cause) is the address policy's refusal. */
function refusedByPolicy(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause)
    if ((e as { code?: unknown }).code === "EENDPOINTREFUSED") return true;
  return false;
}

/**
 * Delivers run webhooks: POSTs the ended run to its `webhook` URL with the configured headers.
 * A 2xx answer delivers it; a 5xx, 408, 429, timeout or network error is retried with exponential
 * backoff (pg-boss's, from `retryDelaySeconds`, doubling with jitter) until `maxAttempts` calls
 * were made; any other answer, or a URL the address policy or allow list now refuses, is final.
 * Each attempt is logged. The job is sent in the transaction that ends the run, so a webhook owed
 * when a process dies is still sent by another; a process that dies mid-call has its job retried
 * when the job expires. A relative ("/…") webhook is POSTed to this server's own routes through
 * `loopback`, with a token of the run (server/jobs/webhook-loopback.ts), and retried alike.
 */
export function createWebhookDeliveryJob(deps: {
  settings: WebhookSettings;
  log: Logger;
  /** How relative webhooks reach this server; absent: they are not delivered. */
  loopback?: WebhookLoopback;
}): JobDefinition<WebhookPayload> {
  const { settings, log } = deps;
  return defineJob<WebhookPayload>({
    name: "agent.webhook",
    version: 1,
    retryLimit: settings.maxAttempts - 1,
    retryDelaySeconds: settings.retryDelaySeconds,
    retryBackoff: true,
    expireInSeconds: settings.timeoutSeconds + EXPIRY_MARGIN_SECONDS,
    workers: DELIVERY_WORKERS,
    batchSize: DELIVERY_BATCH,
    async handler(payload, job) {
      const attempt = job.retryCount + 1;
      // The host only: a URL's path and query may carry the receiver's secrets.
      const relative = isLoopbackWebhook(payload.url);
      const host = relative
        ? "(this server)"
        : URL.canParse(payload.url)
          ? new URL(payload.url).host
          : "(invalid URL)";
      const fields = { runId: payload.runId, workspaceId: payload.workspaceId, host, attempt };
      if (!settings.enabled) {
        log.info("webhook not sent: webhooks are disabled on this server", fields);
        return;
      }
      const problem = await webhookTargetProblem(payload.url, settings);
      if (problem?.kind === "refused") {
        log.warn("webhook not sent: its URL is refused", { ...fields, reason: problem.message });
        return;
      }
      if (relative && !deps.loopback) {
        log.warn("webhook not sent: relative webhooks are not delivered by this process", fields);
        return;
      }
      const started = Date.now();
      const body = JSON.stringify(
        sentBody({ ...payload.body, webhook_sent_at: new Date().toISOString() }, settings.allowedFields),
      );
      let failure: string;
      let own: LoopbackCall | string | undefined;
      try {
        own =
          relative && deps.loopback
            ? await prepareLoopbackCall(
                deps.loopback,
                payload,
                payload.url,
                settings.headers,
                settings.timeoutSeconds + EXPIRY_MARGIN_SECONDS,
              )
            : undefined;
        if (typeof own === "string") throw new Error(own);
        const status = await postWebhook({
          url: own?.url ?? payload.url,
          body,
          headers: own?.headers ?? settings.headers,
          timeoutMs: settings.timeoutSeconds * 1000,
          policy: own?.policy ?? webhookPolicy(settings),
          signal: job.signal,
        });
        const timing = { ...fields, status, ms: Date.now() - started };
        if (status >= 200 && status < 300) {
          log.info("webhook delivered", timing);
          return;
        }
        if (status >= 300 && status < 400) {
          log.warn("webhook answered with a redirect, which is not followed; not retried", timing);
          return;
        }
        if (status < 500 && !RETRYABLE_CLIENT_STATUSES.has(status)) {
          log.warn("webhook refused by its receiver; not retried", timing);
          return;
        }
        failure = `the receiver answered ${status}`;
      } catch (error) {
        if (refusedByPolicy(error)) {
          log.warn("webhook not sent: its host now resolves to a refused address", {
            ...fields,
            reason: (error as Error).message,
          });
          return;
        }
        failure =
          error instanceof WebhookTimeout
            ? error.message
            : `the call failed: ${error instanceof Error ? error.message : String(error)}`;
      } finally {
        if (typeof own === "object") await own.release();
      }
      const last = attempt >= settings.maxAttempts;
      const line = { ...fields, ms: Date.now() - started, reason: failure };
      if (last) log.error(`webhook not delivered after ${attempt} attempts; giving up`, line);
      else log.warn("webhook attempt failed; it is retried", line);
      throw new WebhookRetry(`webhook of run ${payload.runId}, attempt ${attempt}: ${failure}`);
    },
  });
}
