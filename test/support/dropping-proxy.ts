import { createConnection, createServer, type Server, type Socket } from "node:net";

/** A TCP proxy in front of a server that can cut a connection in the middle of an answer. */
export interface DroppingProxy {
  /** `http://127.0.0.1:<port>` of the proxy. */
  readonly baseUrl: string;
  /**
   * Cuts the next connection whose request names `path`, once the server has sent `afterBytes`
   * bytes of answer on it after that request: both sockets are destroyed, as when a network drops.
   * Resolves when it has cut.
   */
  cutNext(path: string, afterBytes: number): Promise<void>;
  /** Connections the proxy has cut so far. */
  readonly cuts: number;
  close(): Promise<void>;
}

interface Cut {
  readonly path: string;
  readonly afterBytes: number;
  readonly done: () => void;
}

/**
 * Starts a {@link DroppingProxy} to `target` (`http://host:port`) on a free loopback port. It reads
 * plaintext HTTP/1.1 request bytes to find the paths; it does not parse HTTP otherwise.
 */
export async function startDroppingProxy(target: string): Promise<DroppingProxy> {
  const { hostname, port } = new URL(target);
  const pending: Cut[] = [];
  const sockets = new Set<Socket>();
  let cuts = 0;
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: hostname, port: Number(port) });
    sockets.add(client);
    sockets.add(upstream);
    let armed: Cut | undefined;
    let sent = 0;
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (chunk: Buffer) => {
      if (!armed) {
        const text = chunk.toString("latin1");
        const index = pending.findIndex((c) => text.includes(c.path));
        if (index >= 0) {
          armed = pending.splice(index, 1)[0];
          sent = 0;
        }
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (armed && sent + chunk.length > armed.afterBytes) {
        const cut = armed;
        client.write(chunk.subarray(0, Math.max(0, cut.afterBytes - sent)), () => {
          cuts += 1;
          drop();
          cut.done();
        });
        armed = undefined;
        return;
      }
      sent += chunk.length;
      client.write(chunk);
    });
    for (const socket of [client, upstream]) {
      socket.on("error", drop);
      socket.on("close", () => {
        sockets.delete(socket);
        drop();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("the proxy has no TCP address");
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    cutNext: (path, afterBytes) => new Promise<void>((done) => pending.push({ path, afterBytes, done })),
    get cuts() {
      return cuts;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
