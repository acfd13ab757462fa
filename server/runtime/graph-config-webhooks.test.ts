import { describe, expect, it } from "vitest";
import { DEFAULT_WEBHOOK_SETTINGS } from "../config.js";
import { webhookTargetProblem } from "../net/webhook-target.js";
import { OPEN_WEBHOOK_URL_POLICY } from "../net/webhook-url-policy.js";
import { parseGraphConfig } from "./graph-config.js";
import {
  mergeWebhookSettings,
  resolveWebhooksSection,
  type WebhooksSection,
} from "./graph-config-webhooks.js";

const file = "/srv/app/langgraph.json";
const graphs = { agent: "./agent.ts:graph" };
/** A header template reading `name`, `${{ env.NAME }}`. */
const env = (name: string) => `\${{ env.${name} }}`;

function sectionOf(webhooks: unknown): WebhooksSection | undefined {
  return parseGraphConfig({ graphs, webhooks }, file).webhooks;
}

function problemsOf(webhooks: unknown): readonly string[] {
  try {
    parseGraphConfig({ graphs, webhooks }, file);
    return [];
  } catch (error) {
    return (error as { problems: readonly string[] }).problems;
  }
}

describe("the graphs file's webhooks section", () => {
  it("reads every key, with LangGraph's defaults", () => {
    expect(sectionOf({})).toEqual({ envPrefix: "LG_WEBHOOK_", headers: {}, url: OPEN_WEBHOOK_URL_POLICY });
    expect(
      sectionOf({
        env_prefix: "HOOK_",
        headers: { "X-Token": `Bearer ${env("HOOK_TOKEN")}`, "X-Static": "v" },
        url: {
          require_https: true,
          allowed_domains: ["Hooks.Example.com", "*.corp.example"],
          allowed_ports: [443, 8443],
          max_url_length: 2048,
          disable_loopback: true,
          disable_private_ips: true,
        },
        allowed_fields: ["run_id", "status"],
      }),
    ).toEqual({
      envPrefix: "HOOK_",
      headers: { "X-Token": `Bearer ${env("HOOK_TOKEN")}`, "X-Static": "v" },
      url: {
        requireHttps: true,
        allowedDomains: ["hooks.example.com", "*.corp.example"],
        allowedPorts: [443, 8443],
        maxUrlLength: 2048,
        disableLoopback: true,
        disablePrivateIps: true,
      },
      allowedFields: ["run_id", "status"],
    });
    expect(parseGraphConfig({ graphs }, file).webhooks).toBeUndefined();
    expect(parseGraphConfig({ graphs, webhooks: {} }, file).warnings).toEqual([]);
  });

  it("stops start-up on a bad value, naming the key and what to fix", () => {
    expect(problemsOf([])).toEqual([
      'webhooks: must be an object such as {"headers": {...}, "url": {...}}, got an array',
    ]);
    expect(problemsOf({ header: {} })).toEqual([
      "webhooks.header: unknown key; webhooks takes env_prefix, headers, url, allowed_fields",
    ]);
    expect(problemsOf({ env_prefix: "1-bad" })).toEqual([
      'webhooks.env_prefix: must be the start of environment variable names such as "LG_WEBHOOK_", got "1-bad"',
    ]);
    expect(problemsOf({ headers: { "X-Token": env("DATABASE_URL") } })).toEqual([
      "webhooks.headers: header X-Token reads DATABASE_URL, but header templates may only read variables starting with LG_WEBHOOK_",
    ]);
    expect(problemsOf({ headers: { "Bad Name": "x", Host: "x", "X-N": 1 } })).toEqual([
      'webhooks.headers: header name "Bad Name" is not a valid HTTP header name',
      "webhooks.headers: header Host is set by the HTTP client itself and cannot be configured",
      "webhooks.headers: header X-N must have a string value",
    ]);
    expect(problemsOf({ url: { require_https: "yes", disable_loopback: 1 } })).toEqual([
      'webhooks.url.require_https: must be true or false, got "yes"',
      "webhooks.url.disable_loopback: must be true or false, got number 1",
    ]);
    expect(problemsOf({ url: { allowed_domains: ["https://a.example"], allowed_ports: [0, "80"] } })).toEqual(
      [
        'webhooks.url.allowed_domains: "https://a.example" must be a host name such as "hooks.example.com" or "*.example.com", without scheme or port',
        "webhooks.url.allowed_ports: number 0 must be a port number from 1 to 65535",
        'webhooks.url.allowed_ports: "80" must be a port number from 1 to 65535',
      ],
    );
    expect(problemsOf({ url: { max_url_length: 100_000, https_only: true } })).toEqual([
      "webhooks.url.https_only: unknown key; webhooks.url takes require_https, allowed_domains, allowed_ports, max_url_length, disable_loopback, disable_private_ips",
      "webhooks.url.max_url_length: must be a whole number of characters from 1 to 65536, got number 100000",
    ]);
    expect(problemsOf({ allowed_fields: ["run_id", "password"] })).toEqual([
      'webhooks.allowed_fields: "password" is not a webhook body field; use run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, kwargs, multitask_strategy, run_started_at, run_ended_at, webhook_sent_at, values, error',
    ]);
  });

  it("fills templates from the environment at start; an unset variable names its header, never a value", () => {
    const section = sectionOf({
      headers: {
        Authorization: `Bearer ${env("LG_WEBHOOK_TOKEN")}`,
        "X-Pair": `${env("LG_WEBHOOK_A")}-${env("LG_WEBHOOK_B")}`,
      },
    });
    if (!section) throw new Error("no section");
    expect(
      resolveWebhooksSection(section, { LG_WEBHOOK_TOKEN: "s3cret", LG_WEBHOOK_A: "a", LG_WEBHOOK_B: "b" }),
    ).toEqual({
      settings: {
        headers: { Authorization: "Bearer s3cret", "X-Pair": "a-b" },
        url: OPEN_WEBHOOK_URL_POLICY,
      },
    });
    expect(resolveWebhooksSection(section, { LG_WEBHOOK_TOKEN: "s3cret", LG_WEBHOOK_A: "a" })).toEqual({
      problems: ["webhooks.headers: header X-Pair reads LG_WEBHOOK_B, which is not set"],
    });
  });

  it("merges with the server's settings: only adding restrictions, the environment's headers winning", () => {
    const merged = mergeWebhookSettings(
      { ...DEFAULT_WEBHOOK_SETTINGS, headers: { authorization: "from-env" } },
      {
        headers: { Authorization: "from-file", "X-File": "f" },
        url: { ...OPEN_WEBHOOK_URL_POLICY, requireHttps: true },
        allowedFields: ["run_id"],
      },
    );
    expect(merged.headers).toEqual({ "X-File": "f", authorization: "from-env" });
    expect(merged.urlPolicy?.requireHttps).toBe(true);
    expect(merged.allowedFields).toEqual(["run_id"]);
    expect(mergeWebhookSettings(DEFAULT_WEBHOOK_SETTINGS, undefined)).toBe(DEFAULT_WEBHOOK_SETTINGS);
  });
});

describe("the URL policy at a webhook's check", () => {
  const lenient = { ...DEFAULT_WEBHOOK_SETTINGS, allowPrivateAddresses: true };
  const policy = (url: Partial<typeof OPEN_WEBHOOK_URL_POLICY>) => ({
    ...lenient,
    urlPolicy: { ...OPEN_WEBHOOK_URL_POLICY, ...url },
  });

  it("relative webhooks are paths of this server, exempt from the address policy unless disabled", async () => {
    expect(await webhookTargetProblem("/hooks/run-done?x=1", DEFAULT_WEBHOOK_SETTINGS)).toBeUndefined();
    for (const bad of ["//evil.example/x", "/\\evil.example", "/a b", "/caf\u00e9"])
      expect(await webhookTargetProblem(bad, lenient)).toMatchObject({
        kind: "refused",
        message: expect.stringMatching(/is not a path of this server/),
      });
    expect(await webhookTargetProblem("/hooks", policy({ disableLoopback: true }))).toEqual({
      kind: "refused",
      message:
        'webhook is a path of this server, and relative ("/…") webhooks are disabled here (webhooks.url.disable_loopback in the graphs file)',
    });
  });

  it("each key refuses what it names", async () => {
    expect(
      await webhookTargetProblem("http://127.0.0.1:8080/h", policy({ requireHttps: true })),
    ).toMatchObject({
      message:
        "webhook must be an https:// URL on this server (webhooks.url.require_https in the graphs file)",
    });
    expect(await webhookTargetProblem("http://127.0.0.1/h", policy({ allowedPorts: [8080] }))).toMatchObject({
      message:
        "webhook port 80 is not allowed on this server: webhooks may only use port 8080 (webhooks.url.allowed_ports in the graphs file)",
    });
    expect(
      await webhookTargetProblem("http://127.0.0.1:8080/h", policy({ allowedPorts: [8080] })),
    ).toBeUndefined();
    expect(
      await webhookTargetProblem("http://127.0.0.1/h", policy({ allowedDomains: ["*.example.com"] })),
    ).toMatchObject({
      message:
        "webhook host 127.0.0.1 is not allowed on this server: webhooks may only reach *.example.com (webhooks.url.allowed_domains in the graphs file)",
    });
    expect(await webhookTargetProblem("http://127.0.0.1/hook", policy({ maxUrlLength: 10 }))).toMatchObject({
      message:
        "webhook is 21 characters long; this server accepts at most 10 (webhooks.url.max_url_length in the graphs file)",
    });
    expect(
      await webhookTargetProblem("http://127.0.0.1/h", policy({ disablePrivateIps: true })),
    ).toMatchObject({
      message:
        "webhook refused: 127.0.0.1 is a loopback or private-network address; a server admin can allow these with webhooks.url.disable_private_ips: false in the graphs file and AGENTPLANE_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true",
    });
  });
});
