import net from "node:net";

/**
 * Checks, before anything slow starts (embedded Postgres, migrations, the admin key), that the
 * server will be able to listen on `host:port`: binds it for a moment and lets go. Throws an error
 * whose message names the setting to change. Port 0 (any free port) always passes.
 *
 * Another process can still take the port between this check and the real listen; that rare race
 * ends in the listen's own error, as before.
 */
export async function checkPortAvailable(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once("error", reject);
      probe.listen({ port, host, exclusive: true }, () => resolve());
    });
  } catch (error) {
    throw new Error(explainListenError(error, port, host));
  }
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

function explainListenError(error: unknown, port: number, host: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case "EADDRINUSE":
      return `port ${port} on ${host} is already in use: stop what listens there or set AGENTPLANE_PORT to a free port (0 picks one)`;
    case "EACCES":
      return `port ${port} on ${host} needs privileges this process lacks: set AGENTPLANE_PORT to a port above 1023`;
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `cannot listen on ${host}: it is no address of this machine; set AGENTPLANE_HOST to one (127.0.0.1, 0.0.0.0, ::)`;
    default:
      return `cannot listen on ${host}:${port} (${code ?? String(error)}): check AGENTPLANE_HOST and AGENTPLANE_PORT`;
  }
}
