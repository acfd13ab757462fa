/**
 * The in-server loopback client: a graph node that creates `new Client()` from
 * `@langchain/langgraph-sdk` with no URL reaches this server, with its run's credentials, as on the
 * LangGraph servers.
 *
 * The SDK's client reads two well-known globals when it is constructed without `apiUrl`: a fetch
 * (`Symbol.for("langgraph_api:fetch")`) and a base URL (`Symbol.for("langgraph_api:url")`). They are
 * getters here: inside a run attempt they answer the API's URL and a fetch bound to the attempt's
 * token (read when the client is built, so a client keeps its run's credentials whichever async
 * context later sends its requests); outside a run they answer nothing and the SDK keeps its defaults.
 *
 * The token is minted per attempt, on its first loopback request: random, stored only as its SHA-256, valid in the run's workspace
 * while the run is active and at most the run's timeout, deleted when the attempt ends. It lives in
 * this process's memory only, so a worker in any process mints its own.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash, randomBytes } from "node:crypto";
import type { Logger } from "../logger.js";
import type { Sql } from "../store/db.js";
import { deleteRunToken, insertRunToken, type RunTokenPurpose } from "../store/run-token-store.js";

/** Prefix of run tokens: the authenticator tells them from API keys by it (and so can secret scanners). */
export const RUN_TOKEN_PREFIX = "ap_rt_";
/** 32 random bytes, as API keys: beyond guessing. */
const TOKEN_BYTES = 32;
/** A token outlives its run's timeout by this much, so it never expires under a running attempt. */
const TOKEN_MARGIN_SECONDS = 60;

const FETCH_SYMBOL = Symbol.for("langgraph_api:fetch");
const URL_SYMBOL = Symbol.for("langgraph_api:url");

/** The credentials and target of the run attempt a node runs in. */
interface LoopbackScope {
  readonly url: string;
  /** The attempt's token (minted on first use). */
  readonly token: () => Promise<string>;
  readonly workspaceId: string;
}

const scopes = new AsyncLocalStorage<LoopbackScope>();

/** The run an attempt is for. */
export interface LoopbackRun {
  workspaceId: string;
  runId: string;
}

/** Runs attempts with loopback credentials. */
export interface Loopback {
  /** Mints the attempt's token, runs `fn` with it in scope, deletes the token when `fn` ends. */
  around<T>(run: LoopbackRun, fn: () => Promise<T>): Promise<T>;
}

/** Dependencies of {@link createLoopback}. */
export interface LoopbackDeps {
  sql: Sql;
  log: Logger;
  /** The API's base URL (known once the server listens); undefined runs attempts without loopback. */
  url: () => string | undefined;
  /** The runs' timeout: a token expires after it. */
  timeoutSeconds: number;
}

/** Creates the {@link Loopback} of a process and registers the globals the SDK reads (once). */
export function createLoopback(deps: LoopbackDeps): Loopback {
  registerLoopbackGlobals();
  return {
    async around(run, fn) {
      const url = deps.url();
      if (url === undefined) return fn();
      // Minted on the first loopback request, so a run that makes none costs no query.
      let minted: Promise<{ token: string; tokenHash: Buffer }> | undefined;
      const token = () => {
        // A failed mint is retried by the next request rather than failing every later one.
        minted ??= mint(deps, run).catch((error: unknown) => {
          minted = undefined;
          throw error;
        });
        return minted.then((m) => m.token);
      };
      try {
        return await scopes.run({ url, token, workspaceId: run.workspaceId }, fn);
      } finally {
        // A token left behind stops working when its run ends and is deleted once it expires.
        if (minted)
          await minted
            .then(({ tokenHash }) => deleteRunToken(deps.sql, tokenHash))
            .catch((error: unknown) =>
              deps.log.warn("could not delete a run's loopback token", { runId: run.runId, error }),
            );
      }
    },
  };
}

/** A new attempt token for `run`, stored as its hash. */
function mint(deps: LoopbackDeps, run: LoopbackRun): Promise<{ token: string; tokenHash: Buffer }> {
  return mintRunToken(deps.sql, run, deps.timeoutSeconds + TOKEN_MARGIN_SECONDS, "attempt");
}

/**
 * A new run token for `run` (random, stored only as its SHA-256) that expires after `ttlSeconds`;
 * delete it with `deleteRunToken(sql, tokenHash)` once its use ends.
 */
export async function mintRunToken(
  sql: Sql,
  run: LoopbackRun,
  ttlSeconds: number,
  purpose: RunTokenPurpose,
): Promise<{ token: string; tokenHash: Buffer }> {
  const token = RUN_TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString("base64url");
  const tokenHash = createHash("sha256").update(token, "utf8").digest();
  await insertRunToken(sql, {
    tokenHash,
    workspaceId: run.workspaceId,
    runId: run.runId,
    ttlSeconds,
    purpose,
  });
  return { token, tokenHash };
}

/** `fn` inside the loopback scope of `run` when there is a loopback, else as it is. */
export function withLoopback<T>(
  loopback: Loopback | undefined,
  run: LoopbackRun,
  fn: () => Promise<T>,
): Promise<T> {
  return loopback ? loopback.around(run, fn) : fn();
}

/** The API's base URL for a server listening on `address` (a wildcard address is reached on loopback). */
export function loopbackUrl(address: { address: string; family: string; port: number }): string {
  if (address.family === "IPv6" || address.address.includes(":")) {
    const host = address.address === "::" ? "::1" : address.address;
    return `http://[${host}]:${address.port}`;
  }
  const host = address.address === "0.0.0.0" ? "127.0.0.1" : address.address;
  return `http://${host}:${address.port}`;
}

let registered = false;

function registerLoopbackGlobals(): void {
  if (registered) return;
  registered = true;
  Object.defineProperty(globalThis, FETCH_SYMBOL, {
    configurable: true,
    get: () => {
      const scope = scopes.getStore();
      return scope ? scopedFetch(scope) : undefined;
    },
  });
  Object.defineProperty(globalThis, URL_SYMBOL, {
    configurable: true,
    get: () => scopes.getStore()?.url,
  });
}

/**
 * A fetch that sends the run's token and workspace in place of any credentials the client set (an
 * API key the SDK read from the environment is meant for another server).
 */
function scopedFetch(scope: LoopbackScope): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.delete("authorization");
    headers.set("x-api-key", await scope.token());
    headers.set("x-tenant-id", scope.workspaceId);
    return fetch(input, { ...init, headers });
  };
}
