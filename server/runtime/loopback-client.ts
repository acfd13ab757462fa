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
 *
 * A custom HTTP app's route (`http.app`) gets a scope too: its loopback requests go to this
 * process's own address with the credentials of the request it serves, never more.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash, randomBytes } from "node:crypto";
import type { Logger } from "../logger.js";
import type { Sql } from "../store/db.js";
import { deleteRunToken, insertRunToken, type RunTokenPurpose } from "../store/tracing/run-token-store.js";

/** Prefix of run tokens: the authenticator tells them from API keys by it (and so can secret scanners). */
export const RUN_TOKEN_PREFIX = "ap_rt_";
/** 32 random bytes, as API keys: beyond guessing. */
const TOKEN_BYTES = 32;
/** A token outlives its run's timeout by this much, so it never expires under a running attempt. */
const TOKEN_MARGIN_SECONDS = 60;

const FETCH_SYMBOL = Symbol.for("langgraph_api:fetch");
const URL_SYMBOL = Symbol.for("langgraph_api:url");

/** Where loopback requests go and the credentials they carry (a run attempt's, or a request's). */
interface LoopbackScope {
  readonly url: string;
  /** Puts the scope's credentials on a loopback request's headers. */
  readonly authorize: (headers: Headers) => Promise<void>;
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
      // The run's token and workspace replace any credentials the client set (an API key the SDK
      // read from the environment is meant for another server).
      const authorize = async (headers: Headers) => {
        headers.delete("authorization");
        headers.set("x-api-key", await token());
        headers.set("x-tenant-id", run.workspaceId);
      };
      try {
        return await scopes.run({ url, authorize }, fn);
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

/** A fetch that sends the scope's credentials. */
function scopedFetch(scope: LoopbackScope): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    await scope.authorize(headers);
    return fetch(input, { ...init, headers });
  };
}

/** The headers that say who a request's caller is, forwarded to a custom route's loopback requests. */
const CALLER_HEADERS = ["authorization", "x-api-key", "x-tenant-id", "x-auth-scheme"] as const;

/** Runs the custom HTTP app's handling of requests with loopback credentials. */
export interface RequestLoopback {
  /**
   * Runs `fn` (the user's app serving `request`) so that `new Client()` without a URL inside it
   * reaches this server as the request's caller: its credentials (`Authorization`, `x-api-key`,
   * `x-tenant-id`, `x-auth-scheme`) replace the client's own; a request without any keeps what the
   * client sends (a key it was given).
   */
  around<T>(request: Request, fn: () => Promise<T>): Promise<T>;
}

/**
 * Creates the {@link RequestLoopback} of a process serving a custom HTTP app, reaching it at `url`
 * (its own address, known once it listens; before that nothing is in scope).
 */
export function createRequestLoopback(url: () => string | undefined): RequestLoopback {
  registerLoopbackGlobals();
  return {
    around(request, fn) {
      const target = url();
      if (target === undefined) return fn();
      const caller = CALLER_HEADERS.flatMap((name) => {
        const value = request.headers.get(name);
        return value === null ? [] : [[name, value] as const];
      });
      const authorize = async (headers: Headers) => {
        if (caller.length === 0) return;
        for (const name of CALLER_HEADERS) headers.delete(name);
        for (const [name, value] of caller) headers.set(name, value);
      };
      return scopes.run({ url: target, authorize }, fn);
    },
  };
}
