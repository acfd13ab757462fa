import { createHmac, timingSafeEqual } from "node:crypto";

/** Claims of a token: `sub` is the user, `exp` (seconds since the epoch) its expiry. */
export type JwtClaims = Record<string, unknown> & { sub?: string; exp?: number };

/** The header every token of this example carries: HMAC-SHA256, the one algorithm it accepts. */
const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");

function signature(input: string, secret: string): Buffer {
  return createHmac("sha256", secret).update(input).digest();
}

/** A compact HS256 JSON Web Token of `claims`, signed with `secret`. */
export function signHs256(claims: JwtClaims, secret: string): string {
  const body = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}`;
  return `${body}.${signature(body, secret).toString("base64url")}`;
}

/**
 * The claims of `token` when it is an HS256 token signed with `secret` and not expired at `nowMs`;
 * undefined otherwise (any other algorithm, a bad signature, malformed parts). The signature is
 * compared in constant time.
 */
export function verifyHs256(token: string, secret: string, nowMs = Date.now()): JwtClaims | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  const [header = "", payload = "", sent = ""] = parts;
  let alg: unknown;
  let claims: unknown;
  try {
    alg = (JSON.parse(Buffer.from(header, "base64url").toString("utf8")) as { alg?: unknown }).alg;
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (alg !== "HS256" || typeof claims !== "object" || claims === null || Array.isArray(claims))
    return undefined;
  const expected = signature(`${header}.${payload}`, secret);
  const given = Buffer.from(sent, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const { exp } = claims as JwtClaims;
  if (exp !== undefined && (typeof exp !== "number" || exp * 1000 <= nowMs)) return undefined;
  return claims as JwtClaims;
}
