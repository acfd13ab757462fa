import { Readable, Writable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { NodeServerRequest, NodeServerResponse } from "../rest/node-types.js";

/**
 * Conversions between Node's request/response objects and the Fetch API's, for the custom HTTP app
 * (`http.app`): the user's app takes a Fetch `Request` and answers a `Response`, while the built-in
 * routes serve Node objects. A request the user's middleware passes on reaches the built-in routes as
 * a Node request again (with whatever the middleware changed), and their answer goes back up the
 * middleware chain as a streaming `Response`.
 */

/** What {@link toFetchRequest} remembers, to hand the original Node request on when nothing changed. */
interface Origin {
  readonly req: NodeServerRequest;
  readonly body: ReadableStream<Uint8Array> | null;
  /** Set once the user's code started reading the body: the Node request is then consumed. */
  pulled: boolean;
  /** Set when the user's code edits the request's headers in place. */
  headersEdited: boolean;
  /** The request's URL as built, to notice a replaced request target cheaply. */
  readonly href: string;
}

/** The `Headers` methods that edit a header list. */
const HEADER_EDITS = ["set", "append", "delete"] as const;

const origins = new WeakMap<Request, Origin>();

/**
 * A response the built-in routes answered in one piece. Its body is made into a stream only when
 * the user's code touches it: a `Response` with a body costs tens of microseconds to build (the
 * stream behind it), a body-less one a few, and a pass-through middleware never reads it; the
 * buffer is then written to the socket as it is.
 */
class BufferedResponse extends Response {
  readonly #buffer: Buffer;
  #real: Response | undefined;

  constructor(buffer: Buffer, init: ResponseInit) {
    super(null, init);
    this.#buffer = buffer;
  }

  /** The buffer, while nobody has read the body as a stream. */
  untouched(): Buffer | undefined {
    return this.#real === undefined ? this.#buffer : undefined;
  }

  #materialize(): Response {
    this.#real ??= new Response(this.#buffer as unknown as BodyInit, {
      status: this.status,
      statusText: this.statusText,
      headers: this.headers,
    });
    return this.#real;
  }

  override get body(): Response["body"] {
    return this.#materialize().body;
  }
  override get bodyUsed(): boolean {
    return this.#real?.bodyUsed ?? false;
  }
  override arrayBuffer(): Promise<ArrayBuffer> {
    return this.#materialize().arrayBuffer();
  }
  override blob(): Promise<Blob> {
    return this.#materialize().blob();
  }
  override formData(): Promise<FormData> {
    return this.#materialize().formData();
  }
  override json(): Promise<unknown> {
    return this.#materialize().json();
  }
  override text(): Promise<string> {
    return this.#materialize().text();
  }
  override clone(): Response {
    return this.#materialize().clone();
  }
}

/** Statuses whose responses carry no body (RFC 9110 §6.4.1). */
const NO_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * The Fetch `Request` of a Node request. The body is read from the Node request only when the user's
 * code reads it, so a request the middleware passes on untouched keeps its Node body. It carries no
 * abort signal (one makes building a `Request` several times dearer); a client that goes away
 * cancels the response's body instead.
 */
export function toFetchRequest(req: NodeServerRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(":")) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.append(name, value);
  }
  const host = req.headers.host ?? (req.headers[":authority"] as string | undefined) ?? "localhost";
  const method = req.method ?? "GET";
  const hasBody =
    method !== "GET" &&
    method !== "HEAD" &&
    ("stream" in req ||
      req.headers["content-length"] !== undefined ||
      req.headers["transfer-encoding"] !== undefined);
  let origin: Origin | undefined;
  let iterator: AsyncIterator<unknown> | undefined;
  const body = hasBody
    ? new ReadableStream<Uint8Array>(
        {
          start: () => {},
          pull: async (controller) => {
            if (origin) origin.pulled = true;
            iterator ??= req.iterator({ destroyOnReturn: false })[Symbol.asyncIterator]();
            const next = await iterator.next();
            if (next.done) controller.close();
            else controller.enqueue(new Uint8Array(next.value as Buffer));
          },
        },
        // Nothing is read before the user's code asks: an untouched body stays in the Node request.
        { highWaterMark: 0 },
      )
    : null;
  const href = `http://${host}${req.url ?? "/"}`;
  const request = new Request(href, {
    method,
    headers,
    body,
    ...(body ? { duplex: "half" } : {}),
  } as RequestInit);
  const state: Origin = { req, body: request.body, pulled: false, headersEdited: false, href: request.url };
  origin = state;
  origins.set(request, state);
  // Edits in place (`c.req.raw.headers.set(…)`) are noticed as they happen, so that an untouched
  // request is recognised without comparing every header.
  const list = request.headers;
  for (const edit of HEADER_EDITS) {
    const original = list[edit] as (...args: unknown[]) => unknown;
    Object.defineProperty(list, edit, {
      value: (...args: unknown[]) => {
        state.headersEdited = true;
        return original.apply(list, args);
      },
    });
  }
  return request;
}

/**
 * The Node request the built-in routes serve for `request`: the original one when the middleware
 * left method, URL, headers and body alone (no copy at all), else one built from `request`.
 */
export function toNodeRequest(request: Request, original: NodeServerRequest): NodeServerRequest {
  const origin = origins.get(request);
  const sameBody = origin !== undefined && request.body === origin.body && !origin.pulled;
  if (
    origin !== undefined &&
    origin.req === original &&
    sameBody &&
    !origin.headersEdited &&
    request.method === (original.method ?? "GET") &&
    request.url === origin.href
  )
    return original;
  const url = new URL(request.url);
  const target = url.pathname + url.search;
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  // A body the middleware replaced has a length of its own; the old Content-Length would lie.
  if (!sameBody) delete headers["content-length"];
  const copy = sameBody
    ? Readable.from(original.iterator({ destroyOnReturn: false }))
    : request.body
      ? Readable.fromWeb(request.body as NodeReadableStream)
      : Readable.from([]);
  return Object.assign(copy, {
    headers,
    method: request.method,
    url: target,
    httpVersion: "1.1",
    httpVersionMajor: 1,
    httpVersionMinor: 1,
    complete: false,
    socket: original.socket,
  }) as unknown as NodeServerRequest;
}

/**
 * A stand-in Node response for the built-in routes whose answer becomes a Fetch `Response`:
 * `response` resolves once the answer is complete (a buffered body) or has started streaming
 * (Server-Sent Events), with the status and headers the route set. Writes wait while the reader
 * of the body is behind (back-pressure), and cancelling the body (the client left) destroys this,
 * which ends the route's stream as a closed connection would.
 */
export class BridgeResponse extends Writable {
  statusCode = 200;
  statusMessage = "";
  headersSent = false;
  readonly response: Promise<Response>;
  readonly #headers = new Map<string, string | number | readonly string[]>();
  readonly #chunks: Buffer[] = [];
  #settle!: (response: Response) => void;
  #fail!: (error: unknown) => void;
  #settled = false;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #pending: (() => void) | undefined;
  readonly #head: boolean;

  constructor(method: string) {
    super();
    this.#head = method === "HEAD";
    this.response = new Promise<Response>((resolve, reject) => {
      this.#settle = resolve;
      this.#fail = reject;
    });
  }

  setHeader(name: string, value: string | number | readonly string[]): this {
    this.#headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string): string | number | readonly string[] | undefined {
    return this.#headers.get(name.toLowerCase());
  }

  getHeaders(): Record<string, string | number | readonly string[]> {
    return Object.fromEntries(this.#headers);
  }

  hasHeader(name: string): boolean {
    return this.#headers.has(name.toLowerCase());
  }

  removeHeader(name: string): void {
    this.#headers.delete(name.toLowerCase());
  }

  writeHead(
    status: number,
    reasonOrHeaders?: string | Record<string, string | number | readonly string[]> | readonly string[],
    maybeHeaders?: Record<string, string | number | readonly string[]> | readonly string[],
  ): this {
    this.statusCode = status;
    const headers = typeof reasonOrHeaders === "string" ? maybeHeaders : reasonOrHeaders;
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2)
        this.setHeader(headers[i] as string, headers[i + 1] as string);
    } else if (headers) {
      for (const [name, value] of Object.entries(headers as Record<string, string>))
        if (value !== undefined) this.setHeader(name, value);
    }
    this.headersSent = true;
    // Headers alone do not settle the response: an answer whose body follows at once is buffered;
    // one that waits (a stream before its first event) starts streaming on the next turn.
    setImmediate(() => this.#startStreaming());
    return this;
  }

  flushHeaders(): void {
    this.headersSent = true;
    this.#startStreaming();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.headersSent = true;
    if (!this.#settled) {
      this.#chunks.push(chunk);
      // A second write means a stream: answer it as one rather than wait for the end.
      if (this.#chunks.length > 1) this.#startStreaming();
      callback();
      return;
    }
    this.#push(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.headersSent = true;
    if (!this.#settled) {
      this.#settled = true;
      const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
      this.#settle(
        this.#bodyless() ? new Response(null, this.#init()) : new BufferedResponse(body, this.#init()),
      );
    } else {
      this.#controller?.close();
    }
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.#settled) {
      this.#settled = true;
      this.#fail(error ?? new Error("the response was abandoned before it started"));
    } else if (this.#controller) {
      try {
        if (error) this.#controller.error(error);
        else this.#controller.close();
      } catch {
        // Already closed or cancelled by the reader: nothing left to end.
      }
    }
    this.#pending?.();
    callback(error);
  }

  #startStreaming(): void {
    if (this.#settled || this.destroyed || this.writableFinished) return;
    this.#settled = true;
    if (this.#bodyless()) {
      this.#settle(new Response(null, this.#init()));
      return;
    }
    const buffered = this.#chunks.splice(0);
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
          for (const chunk of buffered) controller.enqueue(chunk);
        },
        pull: () => {
          const resume = this.#pending;
          this.#pending = undefined;
          resume?.();
        },
        cancel: () => {
          this.destroy();
        },
      },
      // A few chunks in flight keep an SSE stream moving without buffering much.
      { highWaterMark: 4 },
    );
    this.#settle(new Response(body, this.#init()));
  }

  #push(chunk: Buffer, callback: (error?: Error | null) => void): void {
    const controller = this.#controller;
    if (!controller) {
      // A body-less answer (HEAD, 204, 304): what is written is dropped, as Node does.
      callback();
      return;
    }
    try {
      controller.enqueue(chunk);
    } catch (error) {
      callback(error as Error);
      return;
    }
    if ((controller.desiredSize ?? 1) > 0) callback();
    else this.#pending = () => callback();
  }

  #bodyless(): boolean {
    return this.#head || NO_BODY_STATUSES.has(this.statusCode);
  }

  #init(): ResponseInit {
    const headers = new Headers();
    for (const [name, value] of this.#headers) {
      // Framing, not meaning: a middleware that replaces the body would otherwise send a stale
      // length. The writer frames the body it finally gets (writeFetchResponse).
      if (name === "content-length" || name === "transfer-encoding") continue;
      if (Array.isArray(value)) for (const item of value) headers.append(name, String(item));
      else headers.set(name, String(value));
    }
    return { status: this.statusCode, headers };
  }
}

/**
 * Writes a Fetch `Response` to a Node response: status, headers (each `Set-Cookie` on its own), and
 * the body, streamed with back-pressure; a client that leaves cancels the body.
 */
export async function writeFetchResponse(response: Response, res: NodeServerResponse): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers["set-cookie"] = cookies;
  const whole = response instanceof BufferedResponse ? response.untouched() : undefined;
  if (whole !== undefined || response.body === null) {
    if (whole !== undefined) headers["content-length"] = String(whole.length);
    res.writeHead(response.status, headers);
    if (whole === undefined) res.end();
    else res.end(whole);
    return;
  }
  res.writeHead(response.status, headers);
  const reader = response.body.getReader();
  const onClose = () => {
    reader.cancel().catch(() => {});
  };
  res.once("close", onClose);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await drained(res);
      if (res.destroyed) return;
    }
    res.end();
  } catch {
    // The body failed midway (the route broke off its stream): cut the connection, as it would have.
    res.destroy();
  } finally {
    res.off("close", onClose);
  }
}

function drained(res: NodeServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}
