import type { ConnectError } from "@connectrpc/connect";
import type { DatabaseGate } from "../services/system/database-gate.js";
import type { HttpAdapter } from "./http-adapter.js";

/**
 * A REST-only adapter whose endpoints follow the same outage policy as the bound services: refused
 * with UNAVAILABLE while Postgres is down, ended when it goes down while they wait on it, and an
 * error that `explainError` recognises (a lost connection) answered as the `ConnectError` it returns
 * rather than as a 500.
 */
export function gateAdapter(
  adapter: HttpAdapter,
  gate: DatabaseGate,
  explainError: (error: unknown) => ConnectError | undefined,
): HttpAdapter {
  return adapter.map((endpoint) => ({
    ...endpoint,
    serve: async (req, res, call) => {
      try {
        gate.admit();
        await gate.race(endpoint.serve(req, res, call));
      } catch (error) {
        throw explainError(error) ?? error;
      }
    },
  }));
}
