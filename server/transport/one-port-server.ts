import { setMaxListeners } from "node:events";
import http from "node:http";
import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { Code, ConnectError } from "@connectrpc/connect";

/** A request handler that serves both HTTP/1.1 and HTTP/2 requests. */
export type NodeRequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** Options of {@link createOnePortServer}. */
export interface OnePortServerOptions {
  /**
   * The controller whose signal is {@link OnePortServer.shutdownSignal}. Pass one when the handler
   * must be built with the signal before the server exists; by default the server makes its own.
   */
  shutdown?: AbortController;
  /**
   * How long an idle HTTP/1.1 keep-alive connection or an HTTP/2 session without streams stays open;
   * default 75 s (design decision 2: above the 60 s idle timeout of common load balancers, so that
   * they, not we, close idle connections).
   */
  keepAliveTimeoutMs?: number;
  /**
   * Takes an HTTP/1.1 upgrade request (a WebSocket); returns false for one it does not serve,
   * which is answered 404. Without it, every upgrade is answered 404.
   */
  onUpgrade?: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean;
  /** Called first when the server closes: long-lived connections it does not track (WebSockets) go. */
  onClose?: () => void;
}

/** The answer to an upgrade no one serves. */
const UPGRADE_REFUSAL = `HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${JSON.stringify(
  {
    detail: "no WebSocket is served at this path; the protocol's is /threads/{thread_id}/stream/events",
  },
)}`;

/** A server that answers HTTP/1.1 and HTTP/2 without TLS (h2c, prior knowledge) on one port. */
export interface OnePortServer {
  /** Starts listening; resolves to the bound address (pass port 0 for a free port). */
  listen(port: number, host?: string): Promise<AddressInfo>;
  /**
   * Stops accepting connections, closes idle ones at once, and lets requests and streams in flight
   * finish. Streams still open after `graceMs` are told to end through {@link shutdownSignal}; what
   * is left after a short drain is destroyed. Resolves once every connection is closed. Calling it
   * again returns the same promise.
   */
  close(graceMs: number): Promise<void>;
  /**
   * Aborts when `close` gives up waiting, with a ConnectError (UNAVAILABLE). Pass it to the Connect
   * adapter and the REST/SSE layer so their streams end cleanly.
   */
  readonly shutdownSignal: AbortSignal;
}

/** The first bytes of every HTTP/2 connection (RFC 9113 §3.4). */
const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/** The default of {@link OnePortServerOptions.keepAliveTimeoutMs}. */
const KEEP_ALIVE_TIMEOUT_MS = 75_000;

/**
 * How far the headers timeout exceeds the keep-alive timeout, so that a client reusing a connection
 * at the last moment is not cut off by the headers timer (Node's documented recommendation).
 */
const HEADERS_TIMEOUT_MARGIN_MS = 1_000;

/**
 * Time allowed to receive a whole request (headers and body), not to answer it, so long SSE and
 * streaming responses are unaffected; 5 minutes (Node's default) leaves room for large trace uploads
 * on slow links while still bounding clients that trickle a body forever.
 */
const REQUEST_TIMEOUT_MS = 300_000;

/**
 * Time streams get after the shutdown signal fires to write their last frame (gRPC trailers, the end
 * of an SSE response) before their connections are destroyed; loopback and LAN flushes take ms.
 */
const ABORT_DRAIN_MS = 1_000;

/**
 * Streams per HTTP/2 connection, as Go's net/http server allows: it bounds the work one connection can
 * start (Node's default is unlimited); clients needing more open more connections.
 */
const H2_MAX_CONCURRENT_STREAMS = 250;

/**
 * Per-stream and per-connection receive windows: Node's 64 KiB default caps a stream at 64 KiB per
 * round trip, which throttles large uploads (trace batches); 1 MiB per stream as Go's server uses,
 * 16 MiB per connection so that a few large streams proceed in parallel.
 */
const H2_STREAM_WINDOW_BYTES = 1 << 20;
const H2_CONNECTION_WINDOW_BYTES = 16 << 20;

/** The answer to a CONNECT request: this server is no proxy. */
const CONNECT_REFUSAL = (() => {
  const body = JSON.stringify({ detail: "CONNECT is not supported: this server is not a proxy" });
  return `HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
})();

/**
 * Creates a server that hands each connection to an HTTP/2 server when it starts with the HTTP/2
 * preface and to an HTTP/1.1 server otherwise; both call `handler`. Node's own `allowHTTP1` works
 * only with TLS, hence the sniffing.
 */
export function createOnePortServer(
  handler: NodeRequestHandler,
  options: OnePortServerOptions = {},
): OnePortServer {
  const shutdown = options.shutdown ?? new AbortController();
  // Every call in flight links its own signal to this one (and unlinks when it ends), so its
  // listener count is the number of concurrent calls: no limit applies.
  setMaxListeners(0, shutdown.signal);
  const keepAliveMs = options.keepAliveTimeoutMs ?? KEEP_ALIVE_TIMEOUT_MS;
  const headersMs = keepAliveMs + HEADERS_TIMEOUT_MARGIN_MS;
  let closing: Promise<void> | undefined;
  let shuttingDown = false;
  const isShuttingDown = () => shuttingDown;
  const sockets = new Set<net.Socket>();
  const sniffing = new Set<net.Socket>();

  const h1 = createHttp1Server(handler, isShuttingDown, keepAliveMs, headersMs);
  h1.server.on("upgrade", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (shuttingDown || !options.onUpgrade?.(req, socket, head)) socket.end(UPGRADE_REFUSAL);
  });
  const h2 = createHttp2Server(handler, isShuttingDown, keepAliveMs);

  const server = net.createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    sniffing.add(socket);
    // A new connection must send its first bytes within the time HTTP/1.1 allows for headers.
    sniff(socket, headersMs, (isHttp2) => {
      sniffing.delete(socket);
      (isHttp2 ? h2.server : h1.server).emit("connection", socket);
    });
    socket.once("close", () => sniffing.delete(socket));
  });

  const closed = (): Promise<void> => new Promise((resolve) => server.close(() => resolve()));

  const close = async (graceMs: number): Promise<void> => {
    shuttingDown = true;
    options.onClose?.();
    const allClosed = closed();
    for (const socket of sniffing) socket.destroy();
    h1.closeIdle();
    h2.closeSessions();
    if (await settlesWithin(allClosed, graceMs)) return;
    shutdown.abort(new ConnectError("the server is shutting down", Code.Unavailable));
    if (await settlesWithin(allClosed, ABORT_DRAIN_MS)) return;
    h2.destroySessions();
    for (const socket of sockets) socket.destroy();
    await allClosed;
  };

  return {
    shutdownSignal: shutdown.signal,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    close(graceMs) {
      closing ??= close(graceMs);
      return closing;
    },
  };
}

/**
 * Reads until the first bytes either match the whole HTTP/2 preface or stop matching it, puts them
 * back, and reports which protocol the connection speaks. Connections that close, fail or stay
 * silent before that are destroyed.
 */
function sniff(socket: net.Socket, timeoutMs: number, onProtocol: (isHttp2: boolean) => void): void {
  let seen = Buffer.alloc(0);
  const cleanup = () => {
    socket.off("readable", onReadable);
    socket.off("error", onFailure);
    socket.off("end", onFailure);
    socket.off("timeout", onFailure);
    socket.setTimeout(0);
  };
  const onFailure = () => {
    cleanup();
    socket.destroy();
  };
  const onReadable = () => {
    for (let chunk = socket.read(); chunk !== null; chunk = socket.read()) {
      seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    }
    const n = Math.min(seen.length, HTTP2_PREFACE.length);
    if (n === 0) return;
    const matches = seen.subarray(0, n).equals(HTTP2_PREFACE.subarray(0, n));
    if (matches && n < HTTP2_PREFACE.length) return;
    cleanup();
    socket.unshift(seen);
    onProtocol(matches);
  };
  socket.on("readable", onReadable);
  socket.on("error", onFailure);
  socket.on("end", onFailure);
  socket.on("timeout", onFailure);
  socket.setTimeout(timeoutMs);
}

interface Http1Side {
  readonly server: http.Server;
  /** Closes idle keep-alive connections now, and each busy one as soon as its response ends. */
  closeIdle(): void;
}

function createHttp1Server(
  handler: NodeRequestHandler,
  isClosing: () => boolean,
  keepAliveMs: number,
  headersMs: number,
): Http1Side {
  const server = http.createServer({
    keepAliveTimeout: keepAliveMs,
    headersTimeout: headersMs,
    // Node checks the headers and request timeouts on this interval (30 s by default); a tenth of
    // the headers timeout cuts a slow client off at most 10 % late, for a cheap scan of connections.
    connectionsCheckingInterval: headersMs / 10,
    requestTimeout: REQUEST_TIMEOUT_MS,
  });
  const inFlight = new Set<http.ServerResponse>();
  // Added before the handler so that it sees each response before anything is written.
  server.on("request", (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (isClosing()) res.setHeader("connection", "close");
    inFlight.add(res);
    res.once("close", () => {
      inFlight.delete(res);
      if (isClosing()) server.closeIdleConnections();
    });
  });
  server.on("request", handler);
  // Node hands CONNECT requests to "connect" listeners only, and closes the connection without an
  // answer when there is none: answer like any other refused request instead.
  server.on("connect", (_req: http.IncomingMessage, socket: net.Socket) => {
    socket.end(CONNECT_REFUSAL);
  });
  // Node starts the timer that enforces headersTimeout and requestTimeout, and the bookkeeping that
  // closeIdleConnections relies on, on "listening"; this server never listens itself (connections
  // come from the sniffer), so it is told it does.
  server.emit("listening");
  return {
    server,
    closeIdle() {
      // Responses not started yet tell their clients not to reuse the connection.
      for (const res of inFlight) if (!res.headersSent) res.setHeader("connection", "close");
      // Not listening, so net.Server.close only runs http's part: close idle connections and stop
      // the timeout timer.
      server.close();
    },
  };
}

interface Http2Side {
  readonly server: http2.Http2Server;
  /** Sends GOAWAY on every session: streams in flight finish, new ones are refused. */
  closeSessions(): void;
  destroySessions(): void;
}

function createHttp2Server(
  handler: NodeRequestHandler,
  isClosing: () => boolean,
  keepAliveMs: number,
): Http2Side {
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer(
    {
      settings: {
        maxConcurrentStreams: H2_MAX_CONCURRENT_STREAMS,
        initialWindowSize: H2_STREAM_WINDOW_BYTES,
      },
    },
    handler,
  );
  server.on("session", (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    session.once("connect", () => session.setLocalWindowSize(H2_CONNECTION_WINDOW_BYTES));
    closeWhenIdle(session, keepAliveMs);
    if (isClosing()) session.close();
  });
  return {
    server,
    closeSessions() {
      for (const session of sessions) session.close();
    },
    destroySessions() {
      for (const session of sessions) session.destroy();
    },
  };
}

/** Closes a session (GOAWAY) once it has had no open stream for `idleMs`. */
function closeWhenIdle(session: http2.ServerHttp2Session, idleMs: number): void {
  let open = 0;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => session.close(), idleMs).unref();
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(timer);
    stream.once("close", () => {
      if (--open === 0 && !session.closed) arm();
    });
  });
  session.once("close", () => clearTimeout(timer));
  arm();
}

/** Whether `promise` settled within `ms`; the timer is cleared either way. */
async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
