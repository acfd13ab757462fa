import type { AdapterRoute, HttpAdapter } from "./http-adapter.js";
import { USAGE_PAGE_PATH } from "./usage-page-adapter.js";

/** The root path: what a person or a probe opening the server's address first sees. */
export const INDEX_ROUTES = [{ methods: ["GET"], path: "/" }] as const satisfies readonly AdapterRoute[];

/**
 * `GET /`: a small JSON index of the server, its version and where to go next (the API docs, the
 * OpenAPI document, the usage page, health), instead of a bare 404.
 */
export function createIndexAdapter(version: string): HttpAdapter {
  const body = JSON.stringify({
    name: "agentplane",
    version,
    links: {
      docs: "/docs",
      openapi: "/openapi.json",
      usage: USAGE_PAGE_PATH,
      health: "/ok",
      info: "/info",
    },
  });
  return INDEX_ROUTES.map((route) => ({
    ...route,
    serve: async (_req, res) => {
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        "cache-control": "no-cache",
      });
      res.end(body);
    },
  }));
}
