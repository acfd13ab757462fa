/**
 * The graphs file's `webhooks` section, as the LangGraph Python server reads it from langgraph.json:
 * `env_prefix`, `headers` (values may read the environment through `${{ env.NAME }}` templates,
 * only names starting with the prefix), `url` (the URL policy: `require_https`, `allowed_domains`,
 * `allowed_ports`, `max_url_length`, `disable_loopback`, `disable_private_ips`) and
 * `allowed_fields`. Every key is validated at parse; templates are filled in from the process
 * environment at start (after the graphs file's `env` is applied), and a variable that is not set
 * stops start-up too. Problems name their key, never a header's value.
 */
import type { WebhookSettings } from "../config.js";
import { fillWebhookHeaders, templateVariables } from "../net/webhook-headers.js";
import {
  MAX_WEBHOOK_LENGTH,
  OPEN_WEBHOOK_URL_POLICY,
  type WebhookUrlPolicy,
} from "../net/webhook-url-policy.js";
import { isRecord, kind } from "../settings/json-shape.js";

/** The section as written: headers still hold their templates. */
export interface WebhooksSection {
  /** `env_prefix`: the variables header templates may read start with it. */
  readonly envPrefix: string;
  /** `headers`: name → value, templates unfilled. */
  readonly headers: Readonly<Record<string, string>>;
  /** `url`: the URL policy. */
  readonly url: WebhookUrlPolicy;
  /** `allowed_fields`: the body fields a webhook sends; undefined: all. */
  readonly allowedFields?: readonly string[];
}

/** The section at start: headers filled in. */
export type WebhooksFileSettings = Omit<WebhooksSection, "envPrefix">;

/** The LangGraph default of `env_prefix`. */
const DEFAULT_ENV_PREFIX = "LG_WEBHOOK_";
/** An environment variable name prefix. */
const ENV_PREFIX = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A host name or IP literal, with an optional leading `*.` (no scheme, no port). */
const DOMAIN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$|^\[[0-9a-f:.]+\]$/;
/** The fields of a webhook's body (server/jobs/webhook-delivery-job.ts), which `allowed_fields` picks from. */
export const WEBHOOK_BODY_FIELDS = [
  "run_id",
  "thread_id",
  "assistant_id",
  "created_at",
  "updated_at",
  "status",
  "metadata",
  "kwargs",
  "multitask_strategy",
  "run_started_at",
  "run_ended_at",
  "webhook_sent_at",
  "values",
  "error",
] as const;
const SECTION_KEYS = ["env_prefix", "headers", "url", "allowed_fields"];
const URL_KEYS = [
  "require_https",
  "allowed_domains",
  "allowed_ports",
  "max_url_length",
  "disable_loopback",
  "disable_private_ips",
];

/** Validates the `webhooks` value; problems are recorded, each naming its key. */
export function parseWebhooksSection(raw: unknown, problems: string[]): WebhooksSection | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isRecord(raw)) {
    problems.push(`webhooks: must be an object such as {"headers": {...}, "url": {...}}, got ${kind(raw)}`);
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(raw))
    if (!SECTION_KEYS.includes(key))
      problems.push(`webhooks.${key}: unknown key; webhooks takes ${SECTION_KEYS.join(", ")}`);

  const envPrefix = raw.env_prefix ?? DEFAULT_ENV_PREFIX;
  if (typeof envPrefix !== "string" || !ENV_PREFIX.test(envPrefix))
    problems.push(
      `webhooks.env_prefix: must be the start of environment variable names such as "LG_WEBHOOK_", got ${kind(envPrefix)}`,
    );
  const prefix = typeof envPrefix === "string" ? envPrefix : DEFAULT_ENV_PREFIX;

  const headers: Record<string, string> = {};
  if (raw.headers !== undefined && raw.headers !== null) {
    if (!isRecord(raw.headers))
      problems.push(`webhooks.headers: must be an object of header name → value, got ${kind(raw.headers)}`);
    else {
      // Every rule but "is the variable set", which start-up checks: each variable stands in as set.
      const stand: Record<string, string> = {};
      for (const value of Object.values(raw.headers))
        if (typeof value === "string") for (const name of templateVariables(value)) stand[name] = "set";
      const checked = fillWebhookHeaders(raw.headers, stand, prefix);
      if ("problems" in checked)
        for (const problem of checked.problems) problems.push(`webhooks.headers: ${problem}`);
      else Object.assign(headers, raw.headers);
    }
  }

  const url = parseUrlPolicy(raw.url, problems);
  const allowedFields = parseAllowedFields(raw.allowed_fields, problems);
  if (problems.length > before) return undefined;
  return {
    envPrefix: prefix,
    headers,
    url,
    ...(allowedFields === undefined ? {} : { allowedFields }),
  };
}

function parseUrlPolicy(raw: unknown, problems: string[]): WebhookUrlPolicy {
  if (raw === undefined || raw === null) return OPEN_WEBHOOK_URL_POLICY;
  if (!isRecord(raw)) {
    problems.push(`webhooks.url: must be an object such as {"require_https": true}, got ${kind(raw)}`);
    return OPEN_WEBHOOK_URL_POLICY;
  }
  for (const key of Object.keys(raw))
    if (!URL_KEYS.includes(key))
      problems.push(`webhooks.url.${key}: unknown key; webhooks.url takes ${URL_KEYS.join(", ")}`);
  const flag = (key: string): boolean => {
    const value = raw[key] ?? false;
    if (typeof value === "boolean") return value;
    problems.push(`webhooks.url.${key}: must be true or false, got ${kind(value)}`);
    return false;
  };
  const domains: string[] = [];
  const rawDomains = raw.allowed_domains ?? [];
  if (!Array.isArray(rawDomains))
    problems.push(`webhooks.url.allowed_domains: must be a list of host names, got ${kind(rawDomains)}`);
  else
    for (const entry of rawDomains) {
      const domain = typeof entry === "string" ? entry.trim().toLowerCase() : "";
      if (DOMAIN.test(domain)) domains.push(domain);
      else
        problems.push(
          `webhooks.url.allowed_domains: ${kind(entry)} must be a host name such as "hooks.example.com" or "*.example.com", without scheme or port`,
        );
    }
  const ports: number[] = [];
  const rawPorts = raw.allowed_ports ?? [];
  if (!Array.isArray(rawPorts))
    problems.push(`webhooks.url.allowed_ports: must be a list of port numbers, got ${kind(rawPorts)}`);
  else
    for (const entry of rawPorts) {
      if (Number.isInteger(entry) && entry >= 1 && entry <= 65_535) ports.push(entry);
      else problems.push(`webhooks.url.allowed_ports: ${kind(entry)} must be a port number from 1 to 65535`);
    }
  const rawLength = raw.max_url_length ?? MAX_WEBHOOK_LENGTH;
  const lengthOk =
    typeof rawLength === "number" &&
    Number.isInteger(rawLength) &&
    rawLength >= 1 &&
    rawLength <= MAX_WEBHOOK_LENGTH;
  if (!lengthOk)
    problems.push(
      `webhooks.url.max_url_length: must be a whole number of characters from 1 to ${MAX_WEBHOOK_LENGTH}, got ${kind(rawLength)}`,
    );
  return {
    requireHttps: flag("require_https"),
    allowedDomains: domains,
    allowedPorts: ports,
    maxUrlLength: lengthOk ? rawLength : MAX_WEBHOOK_LENGTH,
    disableLoopback: flag("disable_loopback"),
    disablePrivateIps: flag("disable_private_ips"),
  };
}

function parseAllowedFields(raw: unknown, problems: string[]): string[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  const known: readonly string[] = WEBHOOK_BODY_FIELDS;
  if (!Array.isArray(raw) || raw.length === 0) {
    problems.push(
      `webhooks.allowed_fields: must be a non-empty list of body fields (${known.join(", ")}), got ${kind(raw)}`,
    );
    return undefined;
  }
  for (const entry of raw)
    if (typeof entry !== "string" || !known.includes(entry))
      problems.push(
        `webhooks.allowed_fields: ${kind(entry)} is not a webhook body field; use ${known.join(", ")}`,
      );
  return raw.filter((entry): entry is string => typeof entry === "string");
}

/**
 * Fills in the section's header templates from `env` (the process environment at start): the
 * settings, or every problem (a variable that is not set), each naming its header.
 */
export function resolveWebhooksSection(
  section: WebhooksSection,
  env: Record<string, string | undefined>,
): { settings: WebhooksFileSettings } | { problems: string[] } {
  const filled = fillWebhookHeaders(section.headers, env, section.envPrefix);
  if ("problems" in filled)
    return { problems: filled.problems.map((problem) => `webhooks.headers: ${problem}`) };
  const { envPrefix: _, ...rest } = section;
  return { settings: { ...rest, headers: filled.headers } };
}

/**
 * The server's webhook settings with the graphs file's section merged in. The file can only add
 * restrictions, never lift the server's: both allow lists apply, and `disable_private_ips` refuses
 * private addresses even where AGENTPLANE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES allows them. Headers are
 * the union; where both name a header, AGENTPLANE_WEBHOOK_HEADERS (the deployment's) wins.
 */
export function mergeWebhookSettings(
  settings: WebhookSettings,
  file: WebhooksFileSettings | undefined,
): WebhookSettings {
  if (!file) return settings;
  const serverNames = new Set(Object.keys(settings.headers).map((name) => name.toLowerCase()));
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(file.headers))
    if (!serverNames.has(name.toLowerCase())) headers[name] = value;
  return Object.freeze({
    ...settings,
    headers: Object.freeze({ ...headers, ...settings.headers }),
    urlPolicy: file.url,
    ...(file.allowedFields === undefined ? {} : { allowedFields: file.allowedFields }),
  });
}
