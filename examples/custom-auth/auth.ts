/**
 * agentplane's custom auth example: users sign in with HS256 JWTs (`Authorization: Bearer <jwt>`,
 * signed with `JWT_SECRET`) and each sees only their own threads, runs, crons and store items.
 * Name it in the graphs file as `"auth": {"path": "./auth.ts:auth"}`.
 */
import { Auth, HTTPException } from "@langchain/langgraph-sdk/auth";
import { createVerifiedTokens } from "./verified-tokens.js";

/** Checks tokens, remembering the good ones until they expire (a client sends one per request). */
const verifyToken = createVerifiedTokens();

/** What a client without a valid token is told, with the header that says how to authenticate. */
function unauthorized(message: string): HTTPException {
  return new HTTPException(401, { message, headers: { "WWW-Authenticate": 'Bearer realm="agentplane"' } });
}

export const auth = new Auth()
  .authenticate((request) => {
    const secret = process.env.JWT_SECRET;
    if (!secret) throw new HTTPException(503, { message: "the server has no JWT_SECRET set" });
    const token = /^Bearer\s+(\S+)$/i.exec(request.headers.get("authorization") ?? "")?.[1];
    if (!token) throw unauthorized("send a JWT in the Authorization header: Bearer <token>");
    const claims = verifyToken(token, secret);
    if (!claims || typeof claims.sub !== "string") throw unauthorized("the token is invalid or expired");
    return {
      identity: claims.sub,
      display_name: typeof claims.name === "string" ? claims.name : claims.sub,
      permissions: typeof claims.scope === "string" ? claims.scope.split(" ") : [],
    };
  })
  // New threads, runs and crons are stamped with their owner...
  .on("threads:create", ({ value, user }) => {
    value.metadata = { ...value.metadata, owner: user.identity };
  })
  // agentplane hands cron handlers the cron's metadata too (the SDK's CronCreate type lacks it).
  .on("crons:create", ({ value, user }) => {
    const cron = value as typeof value & { metadata?: Record<string, unknown> };
    cron.metadata = { ...cron.metadata, owner: user.identity };
  })
  .on("threads:create_run", ({ value, user }) => {
    value.metadata = { ...value.metadata, owner: user.identity };
    return { owner: user.identity };
  })
  // ...and every other action on them sees only the caller's own.
  .on(["threads", "crons"], ({ user }) => ({ owner: user.identity }))
  // Store items live under the caller's identity: the namespace is prefixed with it.
  .on("store", ({ value, user }) => {
    value.namespace = [user.identity, ...(value.namespace ?? [])];
  });
