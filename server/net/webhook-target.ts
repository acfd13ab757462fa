import type { WebhookSettings } from "../config.js";
import { checkHost, type EndpointPolicy } from "./endpoint-policy.js";

/** The setting that lets webhooks reach loopback and private addresses. */
const ALLOW_PRIVATE_SETTING = "AGENTPLANE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES";

/** What a webhook URL may reach under `settings`. */
export function webhookPolicy(settings: WebhookSettings): EndpointPolicy {
  return { allowPrivate: settings.allowPrivateAddresses, allowSetting: ALLOW_PRIVATE_SETTING };
}

/** Whether `hostname` (lower case, as `URL` gives it) is on the allow list; an empty list allows any. */
export function hostAllowed(hostname: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return true;
  return allowed.some((entry) =>
    entry.startsWith("*.") ? hostname.endsWith(entry.slice(1)) : hostname === entry,
  );
}

/** Why a webhook URL is refused: for good (`refused`), or because its name does not resolve now. */
export type WebhookTargetProblem = { kind: "refused" | "unresolved"; message: string };

/**
 * Checks a webhook URL before it is accepted or called: an absolute http(s) URL, a host on the allow
 * list, and a host whose every address the SSRF policy permits (a name is resolved for this).
 * Answers undefined when the URL may be called, else what is wrong, as a sentence for the user.
 */
export async function webhookTargetProblem(
  url: string,
  settings: WebhookSettings,
): Promise<WebhookTargetProblem | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { kind: "refused", message: `webhook ${JSON.stringify(url)} is not a valid URL` };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return { kind: "refused", message: `webhook must be an http:// or https:// URL, not ${parsed.protocol}` };
  const host = parsed.hostname;
  if (!hostAllowed(host, settings.allowedHosts))
    return {
      kind: "refused",
      message: `webhook host ${host} is not allowed on this server: webhooks may only reach ${settings.allowedHosts.join(", ")}`,
    };
  const check = await checkHost(host, webhookPolicy(settings));
  if (check.ok) return undefined;
  if ("problem" in check) return { kind: "refused", message: `webhook refused: ${check.problem}` };
  return {
    kind: "unresolved",
    message: `webhook host ${host} does not resolve (${check.unresolved}): check the URL`,
  };
}
