import { describe, expect, it } from "vitest";
import { DEFAULT_WEBHOOK_SETTINGS } from "../config.js";
import { hostAllowed, webhookTargetProblem } from "./webhook-target.js";

describe("webhook allow list", () => {
  const list = ["hooks.example.com", "*.corp.example", "[::1]"];

  it.each([
    ["hooks.example.com", true],
    ["a.corp.example", true],
    ["deep.a.corp.example", true],
    ["[::1]", true],
    ["corp.example", false],
    ["evilcorp.example", false],
    ["hooks.example.com.evil.net", false],
    ["other.example.com", false],
  ])("%s allowed: %s", (host, allowed) => {
    expect(hostAllowed(host, list)).toBe(allowed);
  });

  it("an empty list allows any host", () => {
    expect(hostAllowed("anything.example", [])).toBe(true);
  });
});

describe("webhook target check", () => {
  it("answers nothing for a permitted URL and a sentence for a refused one", async () => {
    const lenient = { ...DEFAULT_WEBHOOK_SETTINGS, allowPrivateAddresses: true };
    expect(await webhookTargetProblem("http://127.0.0.1:8080/hook", lenient)).toBeUndefined();
    expect(await webhookTargetProblem("not a url", lenient)).toEqual({
      kind: "refused",
      message: 'webhook "not a url" is not a valid URL',
    });
    expect(await webhookTargetProblem("file:///etc/passwd", lenient)).toEqual({
      kind: "refused",
      message: "webhook must be an http:// or https:// URL, not file:",
    });
    expect(await webhookTargetProblem("http://127.0.0.1/hook", DEFAULT_WEBHOOK_SETTINGS)).toMatchObject({
      kind: "refused",
    });
    expect(await webhookTargetProblem("https://nowhere.invalid/", DEFAULT_WEBHOOK_SETTINGS)).toMatchObject({
      kind: "unresolved",
    });
  });
});
