/**
 * The graphs file's webhook URL policy (`webhooks.url` of langgraph.json): rules a run's `webhook`
 * must meet besides the server's address policy, and the form of a relative ("/…") webhook, which
 * is delivered to this server's own routes.
 */

/** `webhooks.url`: what a webhook URL must look like on this server. */
export interface WebhookUrlPolicy {
  /** `require_https`: absolute URLs must be `https://`. */
  readonly requireHttps: boolean;
  /** `allowed_domains`: hosts (`*.domain` for subdomains) an absolute URL may name; empty: any. */
  readonly allowedDomains: readonly string[];
  /** `allowed_ports`: ports an absolute URL may use (80/443 when it names none); empty: any. */
  readonly allowedPorts: readonly number[];
  /** `max_url_length`: longest webhook accepted, in characters. */
  readonly maxUrlLength: number;
  /** `disable_loopback`: relative ("/…") webhooks are refused. */
  readonly disableLoopback: boolean;
  /** `disable_private_ips`: loopback and private addresses are refused whatever the server's setting. */
  readonly disablePrivateIps: boolean;
}

/** The longest webhook the API accepts (the LangGraph API's limit on `webhook`). */
export const MAX_WEBHOOK_LENGTH = 65_536;

/** The policy without a graphs file `webhooks.url`: nothing beyond the server's own settings. */
export const OPEN_WEBHOOK_URL_POLICY: WebhookUrlPolicy = Object.freeze({
  requireHttps: false,
  allowedDomains: Object.freeze([]) as readonly string[],
  allowedPorts: Object.freeze([]) as readonly number[],
  maxUrlLength: MAX_WEBHOOK_LENGTH,
  disableLoopback: false,
  disablePrivateIps: false,
});

/**
 * A path of this server: one leading "/" (two would name another host, `//evil.example/`), then
 * printable ASCII ("!" to "~", so no space or control character; other characters percent-encoded)
 * but no backslash (URL parsers read it as "/").
 */
const LOOPBACK_PATH = /^\/(?![/\\])[!-[\]-~]*$/;
/** Any origin: a path is resolved against it to check it stays on the origin. */
const PROBE_ORIGIN = "http://loopback.invalid";

/** Whether `webhook` is a relative ("/…") webhook, delivered to this server's own routes. */
export function isLoopbackWebhook(webhook: string): boolean {
  return webhook.startsWith("/");
}

/** Why `path` (a webhook starting with "/") is not a path of this server, or undefined when it is. */
export function loopbackPathProblem(path: string): string | undefined {
  const message = `webhook ${JSON.stringify(path.slice(0, 200))} is not a path of this server: a relative webhook starts with a single "/" and has no spaces, backslashes or characters outside printable ASCII (percent-encode them)`;
  if (!LOOPBACK_PATH.test(path) || !URL.canParse(path, PROBE_ORIGIN)) return message;
  return new URL(path, PROBE_ORIGIN).origin === PROBE_ORIGIN ? undefined : message;
}

/** Whether `hostname` (lower case) matches an entry of `domains` (`*.domain`: its subdomains only). */
export function domainAllowed(hostname: string, domains: readonly string[]): boolean {
  return domains.some((entry) =>
    entry.startsWith("*.") ? hostname.endsWith(entry.slice(1)) : hostname === entry,
  );
}

/**
 * What `policy` says of an absolute http(s) webhook URL: undefined when it passes, else why not as
 * a sentence naming the graphs file key to change.
 */
export function urlPolicyProblem(url: URL, policy: WebhookUrlPolicy): string | undefined {
  if (policy.requireHttps && url.protocol !== "https:")
    return "webhook must be an https:// URL on this server (webhooks.url.require_https in the graphs file)";
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  if (policy.allowedPorts.length > 0 && !policy.allowedPorts.includes(port))
    return `webhook port ${port} is not allowed on this server: webhooks may only use port ${policy.allowedPorts.join(", ")} (webhooks.url.allowed_ports in the graphs file)`;
  if (policy.allowedDomains.length > 0 && !domainAllowed(url.hostname, policy.allowedDomains))
    return `webhook host ${url.hostname} is not allowed on this server: webhooks may only reach ${policy.allowedDomains.join(", ")} (webhooks.url.allowed_domains in the graphs file)`;
  return undefined;
}
