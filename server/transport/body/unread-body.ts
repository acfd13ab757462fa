import type { IncomingMessage } from "node:http";
import { type Http2ServerRequest, constants as h2 } from "node:http2";
import type { NodeServerRequest, NodeServerResponse } from "../rest/node-types.js";

/**
 * A request body the server did not read to the end (it answered first: 413 over the limit, a bad
 * multipart part, a refused or unauthenticated call) must neither hold the connection forever nor
 * be cut off by a reset the client sees before it reads the answer.
 *
 * HTTP/1.1: the rest is read and dropped up to {@link DRAIN_MAX_BYTES} (or {@link DRAIN_MAX_MS}), so
 * the connection can serve the next request; past that the server half-closes (the answer is already
 * out, the client reads it, then the end of the stream) and keeps reading for {@link LINGER_MS}
 * before closing, the lingering close of RFC 9112 §9.6. HTTP/2: RST_STREAM(NO_ERROR) shortly after
 * the answer is sent, which RFC 9113 §8.1 defines as "stop sending the request body, without error".
 */

/** A remainder this small is read so the connection stays usable; a LAN delivers it in milliseconds. */
const DRAIN_MAX_BYTES = 1024 * 1024;
/** Time given to the remainder before the connection is closed instead. */
const DRAIN_MAX_MS = 1_000;
/** Time the server keeps reading after half-closing: a few round trips for the client to see the answer. */
const LINGER_MS = 2_000;
/**
 * Time an HTTP/2 client gets to end its upload itself once the answer is out. connect-node's client
 * reports an early reset as a failed write ("Premature close") rather than the answer it already
 * has; a client that read the answer cancels its stream well within this.
 */
const H2_RESET_GRACE_MS = 1_000;

/** Watches one request: once its answer is sent, whatever is left of its body is settled as above. */
export function settleUnreadBody(req: NodeServerRequest, res: NodeServerResponse): void {
  if ("stream" in req) {
    // Node closes such a stream itself only if nothing ever read from it, and the response emits
    // "finish" only once the stream closes: watch the stream's own writable side instead.
    const stream = (req as Http2ServerRequest).stream;
    stream.once("finish", () => {
      if (stream.closed || req.complete) return;
      const timer = setTimeout(() => {
        if (!stream.closed) stream.close(h2.NGHTTP2_NO_ERROR);
      }, H2_RESET_GRACE_MS).unref();
      stream.once("close", () => clearTimeout(timer));
    });
    return;
  }
  // A request without Content-Length or Transfer-Encoding has no body: nothing to watch.
  if (req.headers["content-length"] === undefined && req.headers["transfer-encoding"] === undefined) return;
  res.once("finish", () => {
    if (!req.complete) drainOrClose(req);
  });
}

function drainOrClose(req: IncomingMessage): void {
  const socket = req.socket;
  if (socket.destroyed) return;
  if (socket.writableEnded) {
    // The answer was the connection's last (Connection: close, HTTP/1.0): Node has half-closed it
    // and would destroy it the moment its FIN is out, resetting a client that is still sending.
    socket.removeListener("finish", socket.destroy);
    linger(req);
    return;
  }
  let drained = 0;
  let closing = false;
  const close = (): void => {
    if (closing) return;
    closing = true;
    clearTimeout(timer);
    socket.end();
    linger(req);
  };
  const timer = setTimeout(close, DRAIN_MAX_MS).unref();
  req.on("data", (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_MAX_BYTES) close();
  });
  req.once("end", () => clearTimeout(timer));
  req.resume();
}

/** Keeps reading (and dropping) a half-closed connection for {@link LINGER_MS}, then closes it. */
function linger(req: IncomingMessage): void {
  req.resume();
  setTimeout(() => req.socket.destroy(), LINGER_MS).unref();
}
