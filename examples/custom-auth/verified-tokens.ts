import { type JwtClaims, verifyHs256 } from "./hs256-jwt.js";

/**
 * Tokens remembered at most: a client sends the same token with every request until it expires,
 * so a cache the size of the active users saves the HMAC and two JSON parses per request; 10,000
 * users' claims are a few megabytes at most.
 */
const MAX_TOKENS = 10_000;

/** {@link verifyHs256} with a memory of the tokens it accepted. */
export type VerifyToken = (token: string, secret: string, nowMs?: number) => Readonly<JwtClaims> | undefined;

/**
 * {@link verifyHs256} that remembers each token it accepted (for the secret it was checked with)
 * until the token expires: whether a signature is good never changes, only the clock does, and
 * the expiry is checked again on every request. Refused tokens are not remembered, so a client
 * sending garbage cannot push out the good ones. When full, the oldest entry makes room.
 */
export function createVerifiedTokens(maxTokens = MAX_TOKENS): VerifyToken {
  const accepted = new Map<string, Readonly<JwtClaims>>();
  return (token, secret, nowMs = Date.now()) => {
    const key = `${secret}\u0000${token}`;
    const known = accepted.get(key);
    if (known) {
      if (known.exp === undefined || known.exp * 1000 > nowMs) return known;
      accepted.delete(key);
      return undefined;
    }
    const claims = verifyHs256(token, secret, nowMs);
    if (!claims) return undefined;
    if (accepted.size >= maxTokens) {
      const oldest = accepted.keys().next();
      if (!oldest.done) accepted.delete(oldest.value);
    }
    const frozen = Object.freeze(claims);
    accepted.set(key, frozen);
    return frozen;
  };
}
