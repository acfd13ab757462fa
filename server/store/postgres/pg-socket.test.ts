import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSql } from "../db.js";
import { noDelaySocketFactory } from "./pg-socket.js";

/** A server that counts the connections it accepts, listening on a TCP port or a Unix socket path. */
async function countingServer(at: { port: 0 } | { path: string }) {
  const accepted: Socket[] = [];
  const server = createServer((socket) => accepted.push(socket));
  await new Promise<void>((resolve) => server.listen(at, resolve));
  return { server, accepted };
}

/** Resolves once `socket` is connected, rejects on its error. */
function connected(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
}

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

describe("noDelaySocketFactory", () => {
  it("connects to the URL's hosts in turn, as the driver fails over between them", async () => {
    const first = await countingServer({ port: 0 });
    const second = await countingServer({ port: 0 });
    servers.push(first.server, second.server);
    const port = (s: Server) => (s.address() as { port: number }).port;
    const connect = noDelaySocketFactory();
    const target = {
      host: ["127.0.0.1", "127.0.0.1"],
      port: [port(first.server), port(second.server)],
      path: false as const,
    };
    const named: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const socket = connect(target);
      sockets.push(socket);
      await connected(socket);
      // As the driver names the peer (TLS server name, errors) on the sockets it connects itself.
      named.push((socket as Socket & { port?: number }).port);
    }
    await expect.poll(() => [first.accepted.length, second.accepted.length]).toEqual([2, 1]);
    expect(named).toEqual([target.port[0], target.port[1], target.port[0]]);
    expect((sockets[0] as Socket & { host?: string }).host).toBe("127.0.0.1");
  });

  it("connects to a Unix socket when the host names a directory", async () => {
    const dir = await mkdtemp(join(tmpdir(), "pg-socket-"));
    try {
      const path = join(dir, ".s.PGSQL.5432");
      const listening = await countingServer({ path });
      servers.push(listening.server);
      const socket = noDelaySocketFactory()({ host: [dir], port: [5432], path });
      sockets.push(socket);
      await connected(socket);
      await expect.poll(() => listening.accepted.length).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("lets a pool's query fail with the connect error when nothing listens", async () => {
    const closed = await countingServer({ port: 0 });
    const port = (closed.server.address() as { port: number }).port;
    await new Promise((resolve) => closed.server.close(resolve));
    const sql = createSql(`postgres://nobody@127.0.0.1:${port}/none`, {
      max: 1,
      statementTimeoutMs: 0,
      applicationName: "pg-socket-test",
    });
    try {
      await expect(sql`select 1`).rejects.toMatchObject({ code: "ECONNREFUSED" });
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
