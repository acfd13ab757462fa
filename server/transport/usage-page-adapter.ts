import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { AdapterRoute, AdapterServe, HttpAdapter } from "./http-adapter.js";

/** Where the Granular Usage page is served (Settings › Billing and Usage › Granular Usage). */
export const USAGE_PAGE_PATH = "/settings/billing/usage";

const ASSETS_PATH = `${USAGE_PAGE_PATH}/assets/`;
const WEB_DIR = fileURLToPath(new URL("../web/usage/", import.meta.url));
const require = createRequire(import.meta.url);

/** Every file the page may load: URL → file and content type. Nothing else is served. */
const FILES: ReadonlyMap<string, { path: string; type: string }> = new Map([
  [USAGE_PAGE_PATH, { path: `${WEB_DIR}index.html`, type: "text/html; charset=utf-8" }],
  [`${ASSETS_PATH}usage.js`, { path: `${WEB_DIR}usage.js`, type: "text/javascript; charset=utf-8" }],
  [`${ASSETS_PATH}usage.css`, { path: `${WEB_DIR}usage.css`, type: "text/css; charset=utf-8" }],
  [
    `${ASSETS_PATH}uPlot.iife.min.js`,
    { path: require.resolve("uplot/dist/uPlot.iife.min.js"), type: "text/javascript; charset=utf-8" },
  ],
  [
    `${ASSETS_PATH}uPlot.min.css`,
    { path: require.resolve("uplot/dist/uPlot.min.css"), type: "text/css; charset=utf-8" },
  ],
]);

/**
 * The page is public (it holds no data); its script asks for an API key and calls the API with it.
 * The policy lets it load only its own files and call only this origin. uPlot sets inline styles.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data: blob:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** The page and each of its assets, for GET and HEAD. */
export const USAGE_PAGE_ROUTES: readonly AdapterRoute[] = [...FILES.keys()].map((path) => ({
  methods: ["GET", "HEAD"],
  path,
}));

/** Serves the Granular Usage web page and its static assets (uPlot from node_modules). */
export function createUsagePageAdapter(): HttpAdapter {
  const cache = new Map<string, Buffer>();
  const serveFile =
    (path: string, file: { path: string; type: string }): AdapterServe =>
    async (req, res) => {
      let body = cache.get(path);
      if (!body) {
        body = await readFile(file.path);
        cache.set(path, body);
      }
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        "content-type": file.type,
        "content-length": String(body.length),
        "cache-control": "no-cache",
      });
      if (req.method === "HEAD") res.end();
      else res.end(body);
    };
  return USAGE_PAGE_ROUTES.map((route) => ({
    ...route,
    serve: serveFile(route.path, FILES.get(route.path)!),
  }));
}
