import type { RequestTarget } from "./authenticator.js";

/**
 * Methods a Fetch `Request` keeps exactly as given (upper case, not forbidden): the lazy request
 * answers `method` without asking Fetch, so any other method gets a built Request instead.
 */
const PLAIN_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** The URL a Fetch `Request` of `url` would report; undefined when Fetch would refuse it. */
function requestUrl(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  // Fetch refuses a URL with credentials.
  return parsed.username === "" && parsed.password === "" ? parsed.href : undefined;
}

/** A built Fetch `Request`; a target Fetch refuses falls back to a plain GET of the server. */
function builtRequest(method: string, url: string, headers: Headers): Request {
  try {
    return new Request(url, { method, headers });
  } catch {
    return new Request("http://localhost/", { method: "GET", headers });
  }
}

/** Where a lazy request's proxy target keeps its state (a symbol no other code can name). */
const STATE = Symbol("auth request state");

/** What a lazy request knows, and the Request once built. */
interface LazyState {
  method: string;
  /** The target's URL until {@link resolveTarget} ran, then the URL Fetch reports. */
  url: string;
  /** Whether `method` and `url` are what Fetch would report (parsing the URL costs a few µs). */
  resolved: boolean;
  readonly given: Headers;
  own: Headers | undefined;
  built: Request | undefined;
}

/**
 * The state with `method` and `url` as the built Request reports them: the URL normalised, or a
 * plain GET of the server when Fetch would refuse the target (as {@link builtRequest} does).
 */
function resolveTarget(state: LazyState): LazyState {
  if (state.resolved) return state;
  const url = requestUrl(state.url);
  if (url === undefined) {
    state.method = "GET";
    state.url = "http://localhost/";
  } else state.url = url;
  state.resolved = true;
  return state;
}

/** A lazy request's proxy target: a Request's prototype, and the state. */
type LazyTarget = Request & { [STATE]: LazyState };

/** The request's own copy of the headers, made on first use. */
function ownHeaders(state: LazyState): Headers {
  state.own ??= new Headers(state.given);
  return state.own;
}

/** The real Fetch Request, built on first use from the same method, URL and headers copy. */
function realRequest(state: LazyState): Request {
  const { method, url } = resolveTarget(state);
  state.built ??= builtRequest(method, url, ownHeaders(state));
  return state.built;
}

/**
 * The traps of every lazy request, shared (one object, not closures per request): `method`, `url`
 * and `headers` from the state; everything else from the real Request.
 */
const LAZY_TRAPS: ProxyHandler<LazyTarget> = {
  get(target, property) {
    const state = target[STATE];
    if (property === "method") return resolveTarget(state).method;
    if (property === "url") return resolveTarget(state).url;
    if (property === "headers") return ownHeaders(state);
    const request = realRequest(state);
    const value: unknown = Reflect.get(request, property, request);
    // Methods run on the real Request (Fetch checks what `this` is); the class stays itself.
    return typeof value === "function" && property !== "constructor" ? value.bind(request) : value;
  },
  has: (target, property) => Reflect.has(target[STATE].built ?? Request.prototype, property),
  set: (target, property, value) => Reflect.set(realRequest(target[STATE]), property, value),
  defineProperty: (target, property, descriptor) =>
    Reflect.defineProperty(realRequest(target[STATE]), property, descriptor),
  deleteProperty: (target, property) => Reflect.deleteProperty(realRequest(target[STATE]), property),
  ownKeys(target) {
    const built = target[STATE].built;
    return built ? Reflect.ownKeys(built) : [];
  },
  getOwnPropertyDescriptor(target, property) {
    const built = target[STATE].built;
    const descriptor = built && Reflect.getOwnPropertyDescriptor(built, property);
    // A proxy may not report a property its target lacks as non-configurable.
    return descriptor && { ...descriptor, configurable: true };
  },
};

/**
 * A `Request` that answers `method`, `url` and `headers` (a copy of `headers`, as a Request holds)
 * without building anything, and builds the real Fetch `Request` (with that same copy) the first
 * time anything else is used: `signal`, `clone()`, the body readers, passing it to `fetch` or to
 * `new Request`. It is `instanceof Request`, and what it answers is what the built one answers.
 */
function lazyRequest(method: string, url: string, headers: Headers): Request {
  const target = Object.create(Request.prototype) as LazyTarget;
  target[STATE] = { method, url, resolved: false, given: headers, own: undefined, built: undefined };
  return new Proxy(target, LAZY_TRAPS);
}

/**
 * Whether this runtime's Fetch takes a {@link lazyRequest} for the Request it stands for (`new
 * Request(request)`, which `fetch(request)` runs too, and `clone()`). Fetch implementations that
 * keep a Request's state in private fields cannot read it through a proxy; there every request
 * gets the built Request.
 */
const LAZY_REQUESTS_WORK = (() => {
  try {
    const lazy = lazyRequest("POST", "http://localhost/probe", new Headers({ "x-probe": "1" }));
    const copy = new Request(lazy);
    const clone = lazy.clone();
    return (
      lazy instanceof Request &&
      copy.method === "POST" &&
      copy.headers.get("x-probe") === "1" &&
      clone.url === "http://localhost/probe"
    );
  } catch {
    return false;
  }
})();

/**
 * The Fetch `Request` custom auth's `authenticate` receives: the request's method, full URL and
 * headers, without its body. Building a `Request` costs Node 10–30 µs (an AbortController, URL
 * parsing, a copy of the headers), a sizable share of a fast request, while handlers mostly read
 * its headers; so where the runtime allows it (see {@link LAZY_REQUESTS_WORK}) it is built only
 * when the handler uses more than `method`, `url` and `headers`, and the URL is parsed only when
 * `method` or `url` is read. A target Fetch would refuse falls back to a plain GET of the server.
 */
export function authRequest(headers: Headers, target: RequestTarget): Request {
  return LAZY_REQUESTS_WORK && PLAIN_METHODS.has(target.method)
    ? lazyRequest(target.method, target.url, headers)
    : builtRequest(target.method, target.url, headers);
}
