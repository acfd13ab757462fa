import { randomUUID } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { Queryable } from "../../store/db.js";
import { type FeedbackTokenRecord, insertFeedbackTokens } from "../../store/tracing/feedback-token-store.js";
import { invalid } from "../request-validation.js";

/*
 * Presigned feedback tokens: LangSmith's way of letting a page without an API key leave feedback on
 * a run (createPresignedFeedbackToken), which the Agent Server hands out for a run's `feedback_keys`.
 * agentplane is its own LangSmith-compatible tracing server, so the URLs point at its own
 * `POST /api/v1/feedback/tokens/{token}` (FeedbackTokenService).
 */

/** Where a token is redeemed, under the server's origin. */
export const FEEDBACK_TOKEN_PATH = "/api/v1/feedback/tokens";
/** A token's lifetime when the creator names none: the langsmith SDK's default (3 hours). */
const DEFAULT_LIFETIME_MS = 3 * 60 * 60 * 1000;
/** The longest lifetime accepted: a presigned link is for a session's feedback, not for good. */
const MAX_LIFETIME_MS = 30 * 24 * 60 * 60 * 1000;
/** The longest feedback key: the feedback API's own limit (run-normalizer.ts). */
const MAX_FEEDBACK_KEY = 1_000;

/** The origin a caller reached the server at (`http://host:port`; `https` behind a proxy that says so). */
export function callerOrigin(ctx: HandlerContext): string {
  const url = new URL(ctx.url);
  const forwarded = ctx.requestHeader.get("x-forwarded-proto")?.split(",")[0]?.trim();
  return `${forwarded === "https" ? "https" : url.protocol.replace(":", "")}://${url.host}`;
}

/** The URL a token is redeemed at. */
export function feedbackTokenUrl(origin: string, tokenId: string): string {
  return `${origin}${FEEDBACK_TOKEN_PATH}/${tokenId}`;
}

/** A token's expiry from `expires_in` ({days, hours, minutes}) or `expires_at`; 3 hours by default. */
export function tokenExpiry(
  expiresIn: { days?: number; hours?: number; minutes?: number } | undefined,
  expiresAt: string | undefined,
  now: Date,
): Date {
  if (expiresIn && expiresAt !== undefined) throw invalid("give expires_in or expires_at, not both");
  let ms = DEFAULT_LIFETIME_MS;
  if (expiresAt !== undefined) {
    const at = Date.parse(expiresAt);
    if (Number.isNaN(at))
      throw invalid(`expires_at must be an RFC 3339 time, got ${JSON.stringify(expiresAt)}`);
    ms = at - now.getTime();
  } else if (expiresIn) {
    const { days = 0, hours = 0, minutes = 0 } = expiresIn;
    ms = ((days * 24 + hours) * 60 + minutes) * 60_000;
  }
  if (!(ms > 0)) throw invalid("the token must expire in the future");
  if (ms > MAX_LIFETIME_MS) throw invalid("a feedback token lives at most 30 days");
  return new Date(now.getTime() + ms);
}

/** A feedback key as tokens take it: non-empty, at most {@link MAX_FEEDBACK_KEY} characters. */
export function requireFeedbackKey(key: string, at: string): string {
  if (key === "" || key.length > MAX_FEEDBACK_KEY)
    throw invalid(`${at} must be a feedback key of 1 to ${MAX_FEEDBACK_KEY} characters`);
  return key;
}

/** The kinds of feedback config a token may carry (LangSmith's FeedbackConfig). */
const CONFIG_TYPES = ["continuous", "categorical", "freeform"];

/** Validates a token's feedback config; null for none. */
export function parseFeedbackConfig(config: JsonObject | undefined): JsonObject | null {
  if (config === undefined) return null;
  const { type, min, max, categories } = config;
  if (typeof type !== "string" || !CONFIG_TYPES.includes(type))
    throw invalid(`feedback_config.type must be one of ${CONFIG_TYPES.join(", ")}`);
  for (const [name, bound] of [
    ["min", min],
    ["max", max],
  ] as const)
    if (bound !== undefined && bound !== null && typeof bound !== "number")
      throw invalid(`feedback_config.${name} must be a number`);
  if (typeof min === "number" && typeof max === "number" && min > max)
    throw invalid("feedback_config.min must not be above feedback_config.max");
  if (categories !== undefined && categories !== null) {
    if (!Array.isArray(categories) || categories.some((c) => typeof categoryValue(c) !== "number"))
      throw invalid('feedback_config.categories must be a list of {"value": number, "label"?: string}');
  }
  return config;
}

function categoryValue(category: JsonValue): unknown {
  return typeof category === "object" && category !== null && !Array.isArray(category)
    ? category.value
    : undefined;
}

/**
 * Checks feedback given with a token against the token's config: a continuous score within
 * [min, max], a categorical score among the categories' values. INVALID_ARGUMENT otherwise.
 */
export function checkAgainstConfig(config: JsonObject | null, score: number | null): void {
  if (!config || score === null) return;
  const { min, max, categories } = config;
  if (typeof min === "number" && score < min)
    throw invalid(`score ${score} is below this key's minimum ${min}`);
  if (typeof max === "number" && score > max)
    throw invalid(`score ${score} is above this key's maximum ${max}`);
  if (config.type === "categorical" && Array.isArray(categories)) {
    const allowed = categories.map(categoryValue);
    if (!allowed.includes(score))
      throw invalid(`score ${score} is not one of this key's categories: ${allowed.join(", ")}`);
  }
}

/** A token to hand out: its id, URL and expiry. */
export interface IssuedToken {
  readonly id: string;
  readonly url: string;
  readonly expiresAt: Date;
}

/** Stores one token per key for `runId` and answers them, in the order of `keys`. */
export async function issueFeedbackTokens(
  q: Queryable,
  target: { workspaceId: string; runId: string; origin: string },
  keys: readonly string[],
  options: { expiresAt: Date; feedbackConfig?: JsonObject | null },
): Promise<IssuedToken[]> {
  const tokens = keys.map((feedbackKey) => ({
    id: randomUUID(),
    runId: target.runId,
    feedbackKey,
    feedbackConfig: options.feedbackConfig ?? null,
    expiresAt: options.expiresAt,
  }));
  await insertFeedbackTokens(q, target.workspaceId, tokens);
  return tokens.map((t) => issued(t, target.origin));
}

/** A stored token as handed out. */
export function issued(token: Pick<FeedbackTokenRecord, "id" | "expiresAt">, origin: string): IssuedToken {
  return { id: token.id, url: feedbackTokenUrl(origin, token.id), expiresAt: token.expiresAt };
}

/**
 * A wait or join answer for a run with `feedback_keys` (the SDK's `feedbackKeys`): its output with
 * `__feedback__`, each key → a fresh presigned URL on the run (its trace's root run) valid for the
 * default lifetime. Output that is not an object, or a run without keys, is answered unchanged.
 */
export async function withFeedbackUrls(
  q: Queryable,
  target: { workspaceId: string; runId: string; origin: string },
  output: JsonValue,
  feedbackKeys: unknown,
  now: Date = new Date(),
): Promise<JsonValue> {
  if (!Array.isArray(feedbackKeys) || feedbackKeys.length === 0) return output;
  if (typeof output !== "object" || output === null || Array.isArray(output)) return output;
  const keys = feedbackKeys.map(String);
  const tokens = await issueFeedbackTokens(q, target, keys, {
    expiresAt: tokenExpiry(undefined, undefined, now),
  });
  return { ...output, __feedback__: Object.fromEntries(keys.map((key, i) => [key, tokens[i]!.url])) };
}
