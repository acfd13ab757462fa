import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from "node:dns";
import { lookup as dnsLookupAsync } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/**
 * Which addresses a user-supplied URL may make the server reach (server-side request forgery
 * policy), shared by bulk export destinations (`endpoint_url`) and run webhooks. The server, not the
 * user, makes these requests, so a URL must not point it at itself or at its network:
 * - never: link-local addresses (169.254.0.0/16, fe80::/10, where cloud metadata services such as
 *   169.254.169.254 answer), unspecified (0.0.0.0/8, ::), multicast, broadcast and reserved ranges;
 * - only when the feature's setting allows it (a self-hosted MinIO or receiver on the same host or
 *   network, and the tests): loopback (127.0.0.0/8, ::1) and private networks (10.0.0.0/8,
 *   172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7).
 * Names are checked on every connection, after DNS resolution, so a name that later resolves to a
 * refused address (DNS rebinding) is refused too; an IPv4-mapped IPv6 address counts as its IPv4.
 */
export interface EndpointPolicy {
  allowPrivate: boolean;
  /** The setting that allows loopback and private addresses, named in refusals (`NAME=true`). */
  allowSetting: string;
}

/** The ranges refused whatever the configuration. */
const NEVER = new BlockList();
NEVER.addSubnet("0.0.0.0", 8, "ipv4");
NEVER.addSubnet("169.254.0.0", 16, "ipv4");
NEVER.addSubnet("224.0.0.0", 4, "ipv4");
NEVER.addSubnet("240.0.0.0", 4, "ipv4");
NEVER.addAddress("::", "ipv6");
NEVER.addSubnet("fe80::", 10, "ipv6");
NEVER.addSubnet("ff00::", 8, "ipv6");

/** Loopback and private ranges: refused unless the configuration allows private endpoints. */
const PRIVATE = new BlockList();
PRIVATE.addSubnet("127.0.0.0", 8, "ipv4");
PRIVATE.addSubnet("10.0.0.0", 8, "ipv4");
PRIVATE.addSubnet("172.16.0.0", 12, "ipv4");
PRIVATE.addSubnet("192.168.0.0", 16, "ipv4");
PRIVATE.addSubnet("100.64.0.0", 10, "ipv4");
PRIVATE.addAddress("::1", "ipv6");
PRIVATE.addSubnet("fc00::", 7, "ipv6");

/** The prefix of an IPv4-mapped IPv6 address in its dotted form. */
const MAPPED_PREFIX = "::ffff:";

/** Thrown when an endpoint's host is (or resolves to) an address the policy refuses. */
export class EndpointRefused extends Error {
  readonly code = "EENDPOINTREFUSED";
  constructor(message: string) {
    super(message);
    this.name = "EndpointRefused";
  }
}

/** Why `address` (an IP literal) may not be reached, or undefined when it may. */
export function addressProblem(address: string, policy: EndpointPolicy): string | undefined {
  const bare = address.replace(/^\[|\]$/g, "");
  const v4 = bare.toLowerCase().startsWith(MAPPED_PREFIX) ? bare.slice(MAPPED_PREFIX.length) : bare;
  const family = isIP(v4) === 4 ? "ipv4" : isIP(bare) === 6 ? "ipv6" : undefined;
  if (family === undefined) return undefined;
  const ip = family === "ipv4" ? v4 : bare;
  if (NEVER.check(ip, family))
    return `${address} is a link-local, unspecified, multicast or reserved address, which the server may never reach`;
  if (!policy.allowPrivate && PRIVATE.check(ip, family))
    return `${address} is a loopback or private-network address; a server admin can allow these with ${policy.allowSetting}=true`;
  return undefined;
}

/** Why the host of `endpointUrl` may not be reached when it is an IP literal (names are checked at connect time). */
export function endpointHostProblem(endpointUrl: string, policy: EndpointPolicy): string | undefined {
  return addressProblem(new URL(endpointUrl).hostname, policy);
}

/** What resolving a URL's host found: why it is refused, or that its name does not resolve now. */
export type HostCheck = { ok: true } | { ok: false; problem: string } | { ok: false; unresolved: string };

/**
 * Resolves `hostname` (an IP literal is taken as it is) and checks every address it has against
 * `policy`: the check made before a URL is accepted. Connections are checked again when made
 * ({@link guardedLookup}), as a name may resolve differently later.
 */
export async function checkHost(hostname: string, policy: EndpointPolicy): Promise<HostCheck> {
  const literal = addressProblem(hostname, policy);
  if (literal) return { ok: false, problem: literal };
  if (isIP(hostname.replace(/^\[|\]$/g, "")) !== 0) return { ok: true };
  let addresses: LookupAddress[];
  try {
    addresses = await dnsLookupAsync(hostname, { all: true });
  } catch (error) {
    return { ok: false, unresolved: (error as NodeJS.ErrnoException).code ?? String(error) };
  }
  for (const { address } of addresses) {
    const problem = addressProblem(address, policy);
    if (problem) return { ok: false, problem: `${hostname} resolves to ${problem}` };
  }
  return { ok: true };
}

/** The callback shape of `dns.lookup` that Node's HTTP agents call. */
type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for HTTP agents that resolves a name and refuses it when any of its addresses is
 * refused by `policy`; connections then fail with {@link EndpointRefused}.
 */
export function guardedLookup(policy: EndpointPolicy) {
  return (hostname: string, options: LookupAllOptions | object, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      for (const { address } of addresses) {
        const problem = addressProblem(address, policy);
        if (problem) return callback(new EndpointRefused(`${hostname} resolves to ${problem}`), []);
      }
      if ((options as { all?: boolean }).all) return callback(null, addresses);
      const [first] = addresses;
      if (!first)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), []);
      callback(null, first.address, first.family);
    });
  };
}
