import { Socket } from "node:net";

/** What postgres.js passes its `socket` option: the parsed hosts, ports and Unix socket path. */
export interface SocketTarget {
  host: readonly string[];
  port: readonly number[];
  /** The Unix socket's path when the host names a directory; false otherwise. */
  path: string | false;
}

/**
 * A socket factory for postgres.js's `socket` option: the connection it would open itself, with
 * Nagle's algorithm off (TCP_NODELAY), as libpq and the Postgres server set it on their side.
 *
 * postgres.js leaves Nagle on. A statement of more than one segment (an ingest batch's ~200 KB of
 * runs) then has its last, partial segment held back until the segments before it are
 * acknowledged, which the backend, busy reading them, delays (Linux's delayed ACK, up to 40 ms);
 * likewise a small message written right behind a large one (COMMIT after a batch). Measured on
 * one connection writing 100-run batches in workspace scopes: 20-27 ms per batch with Nagle, 12-13
 * ms without, the same backend CPU.
 *
 * Each call connects to the next of the URL's hosts in turn, as the driver does itself when it
 * fails over between several. The socket is returned while it connects: the driver writes its
 * startup message at once, which the socket sends once connected, and a failed connect reaches the
 * driver as the socket's `error` event.
 */
export function noDelaySocketFactory(): (target: SocketTarget) => Socket {
  let attempt = 0;
  return ({ host, port, path }) => {
    const socket = new Socket();
    socket.setNoDelay(true);
    if (path) {
      socket.connect(path);
    } else {
      const index = attempt++ % host.length;
      const target = { host: host[index] ?? "localhost", port: port[index] ?? port[0] ?? 5432 };
      // The driver reads these back, as on the sockets it connects itself: the TLS server name
      // (SNI, which hosted Postgres services route by) and the address in connection errors.
      Object.assign(socket, target);
      socket.connect(target.port, target.host);
    }
    return socket;
  };
}
