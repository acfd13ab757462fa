import { describe, expect, it } from "vitest";
import { addressProblem, checkHost, EndpointRefused, guardedLookup } from "./endpoint-policy.js";

const allowSetting = "AGENTPLANE_EXPORT_ALLOW_PRIVATE_ENDPOINTS";
const strict = { allowPrivate: false, allowSetting };
const lenient = { allowPrivate: true, allowSetting };

describe("endpoint policy", () => {
  it.each([
    "169.254.169.254",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "[fe80::1]",
    "::",
    "ff02::1",
    "::ffff:169.254.169.254",
  ])("never reaches %s", (address) => {
    expect(addressProblem(address, lenient)).toMatch(/may never reach/);
    expect(addressProblem(address, strict)).toMatch(/may never reach/);
  });

  it.each([
    "127.0.0.1",
    "127.8.9.10",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "100.64.0.1",
    "[::1]",
    "fd00::1",
    "::ffff:127.0.0.1",
    "::FFFF:10.0.0.1",
  ])("reaches loopback and private %s only when allowed", (address) => {
    expect(addressProblem(address, strict)).toMatch(/AGENTPLANE_EXPORT_ALLOW_PRIVATE_ENDPOINTS=true/);
    expect(addressProblem(address, lenient)).toBeUndefined();
  });

  it.each(["8.8.8.8", "172.32.0.1", "52.216.0.1", "2600:1f18::1", "s3.amazonaws.com"])(
    "reaches the public address %s (and leaves names to the lookup)",
    (address) => {
      expect(addressProblem(address, strict)).toBeUndefined();
    },
  );

  it("refuses a name that resolves to a refused address when connecting", async () => {
    const lookup = guardedLookup(strict);
    const error = await new Promise<unknown>((resolve) => lookup("localhost", {}, (e) => resolve(e)));
    expect(error).toBeInstanceOf(EndpointRefused);
    expect(String((error as Error).message)).toMatch(
      /^localhost resolves to .* loopback or private-network address/,
    );
  });

  it("passes a name's addresses on in the shape the caller asked for when allowed", async () => {
    const lookup = guardedLookup(lenient);
    const one = await new Promise<unknown[]>((resolve) =>
      lookup("localhost", {}, (e, address, family) => resolve([e, address, family])),
    );
    expect(one[0]).toBeNull();
    expect(["127.0.0.1", "::1"]).toContain(one[1]);
    const all = await new Promise<unknown[]>((resolve) =>
      lookup("localhost", { all: true }, (e, addresses) => resolve([e, addresses])),
    );
    expect(all[1]).toEqual(expect.arrayContaining([expect.objectContaining({ address: one[1] })]));
  });

  it("checks a host before use: literals as they are, names by every address they resolve to", async () => {
    expect(await checkHost("127.0.0.1", strict)).toEqual({
      ok: false,
      problem: expect.stringMatching(/^127\.0\.0\.1 is a loopback/),
    });
    expect(await checkHost("[::1]", lenient)).toEqual({ ok: true });
    expect(await checkHost("169.254.169.254", lenient)).toMatchObject({ ok: false });
    expect(await checkHost("localhost", strict)).toEqual({
      ok: false,
      problem: expect.stringMatching(/^localhost resolves to .* loopback or private-network address/),
    });
    expect(await checkHost("localhost", lenient)).toEqual({ ok: true });
    expect(await checkHost("no-such-host.invalid", strict)).toEqual({
      ok: false,
      unresolved: expect.any(String),
    });
  });
});
