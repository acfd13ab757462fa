import type { WebhookSettings } from "../config.js";
import { checkHost, type EndpointPolicy } from "./endpoint-policy.js";
import {
  domainAllowed,
  isLoopbackWebhook,
  loopbackPathProblem,
  OPEN_WEBHOOK_URL_POLICY,
  urlPolicyProblem,
} from "./webhook-url-policy.js";

/** The setting that lets webhooks reach loopback and private addresses. */
const ALLOW_PRIVATE_SETTING = "AGENTPLANE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES";

/** What a webhook URL may reach under `settings`. */
export function webhookPolicy(settings: WebhookSettings): EndpointPolicy {
  // The graphs file's `disable_private_ips` can only take away what the server's setting allows.
  const fileRefuses = (settings.urlPolicy ?? OPEN_WEBHOOK_URL_POLICY).disablePrivateIps;
  return {
    allowPrivate: settings.allowPrivateAddresses && !fileRefuses,
    // Refusals end "… allow these with <allowSetting>=true".
    allowSetting: fileRefuses
      ? `webhooks.url.disable_private_ips: false in the graphs file and ${ALLOW_PRIVATE_SETTING}`
      : ALLOW_PRIVATE_SETTING,
  };
}

/** Whether `hostname` (lower case, as `URL` gives it) is on the allow list; an empty list allows any. */
export function hostAllowed(hostname: string, allowed: readonly string[]): boolean {
  return allowed.length === 0 || domainAllowed(hostname, allowed);
}

/** Why a webhook URL is refused: for good (`refused`), or because its name does not resolve now. */
export type WebhookTargetProblem = { kind: "refused" | "unresolved"; message: string };

/**
 * Checks a webhook URL before it is accepted or called: at most the policy's length; a relative
 * ("/…") webhook must be a path of this server and loopback webhooks allowed (it never leaves the
 * process, so the address policy does not apply); an absolute one must be http(s), meet the graphs
 * file's `webhooks.url` policy, be on the allow list, and have a host whose every address the SSRF
 * policy permits (a name is resolved for this). Answers undefined when the URL may be called, else
 * what is wrong, as a sentence for the user.
 */
export async function webhookTargetProblem(
  url: string,
  settings: WebhookSettings,
): Promise<WebhookTargetProblem | undefined> {
  const policy = settings.urlPolicy ?? OPEN_WEBHOOK_URL_POLICY;
  if (url.length > policy.maxUrlLength)
    return {
      kind: "refused",
      message: `webhook is ${url.length} characters long; this server accepts at most ${policy.maxUrlLength} (webhooks.url.max_url_length in the graphs file)`,
    };
  if (isLoopbackWebhook(url)) {
    if (policy.disableLoopback)
      return {
        kind: "refused",
        message:
          'webhook is a path of this server, and relative ("/…") webhooks are disabled here (webhooks.url.disable_loopback in the graphs file)',
      };
    const problem = loopbackPathProblem(url);
    return problem === undefined ? undefined : { kind: "refused", message: problem };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { kind: "refused", message: `webhook ${JSON.stringify(url)} is not a valid URL` };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return { kind: "refused", message: `webhook must be an http:// or https:// URL, not ${parsed.protocol}` };
  const fileProblem = urlPolicyProblem(parsed, policy);
  if (fileProblem) return { kind: "refused", message: fileProblem };
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
