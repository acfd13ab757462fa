import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { AdapterRoute, AdapterServe, HttpAdapter } from "../http-adapter.js";
import { buildOpenApiDocument, type OpenApiSources } from "./openapi-document.js";
import { readProtoComments } from "./proto-comments.js";

/** Where the OpenAPI document is served. */
export const OPENAPI_PATH = "/openapi.json";
/** Where the API reference page is served. */
export const DOCS_PATH = "/docs";

const ASSETS_PATH = `${DOCS_PATH}/assets/`;
const WEB_DIR = fileURLToPath(new URL("../../web/docs/", import.meta.url));
/** The API's .proto files, whose comments describe it (the generated code carries none). */
const PROTO_DIR = fileURLToPath(new URL("../../../proto/agentplane/", import.meta.url));
const require = createRequire(import.meta.url);

/** A file the docs pages may load: where it is and its content type. */
interface StaticFile {
  readonly path: string;
  readonly type: string;
}

/** Every file of the page: URL → file. Swagger UI comes from node_modules (swagger-ui-dist). */
const FILES: ReadonlyMap<string, StaticFile> = new Map([
  [DOCS_PATH, { path: `${WEB_DIR}index.html`, type: "text/html; charset=utf-8" }],
  [`${ASSETS_PATH}docs.js`, { path: `${WEB_DIR}docs.js`, type: "text/javascript; charset=utf-8" }],
  [`${ASSETS_PATH}docs.css`, { path: `${WEB_DIR}docs.css`, type: "text/css; charset=utf-8" }],
  [
    `${ASSETS_PATH}swagger-ui-bundle.js`,
    { path: require.resolve("swagger-ui-dist/swagger-ui-bundle.js"), type: "text/javascript; charset=utf-8" },
  ],
  [
    `${ASSETS_PATH}swagger-ui.css`,
    { path: require.resolve("swagger-ui-dist/swagger-ui.css"), type: "text/css; charset=utf-8" },
  ],
]);

/**
 * The page runs only this server's scripts (no inline script, no eval) and calls only this origin
 * ("Try it out"). Swagger UI sets inline styles and draws its icons from data: URLs.
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** The document, the page and its assets, for GET and HEAD. */
export const DOCS_ROUTES: readonly AdapterRoute[] = [OPENAPI_PATH, ...FILES.keys()].map((path) => ({
  methods: ["GET", "HEAD"],
  path,
}));

/**
 * Serves `/openapi.json` (built once, on its first request, from `sources` and the comments of proto/agentplane)
 * and the `/docs` page that renders it with Swagger UI. Both are public: they describe the API and
 * hold no data.
 */
export function createDocsAdapter(sources: Omit<OpenApiSources, "comments">): HttpAdapter {
  // Built on the first request rather than at start: every process starts without reading proto/.
  let documentBody: Promise<Buffer> | undefined;
  const openApiBody = (): Promise<Buffer> => {
    documentBody ??= readProtoComments(PROTO_DIR).then((comments) =>
      Buffer.from(
        JSON.stringify(
          buildOpenApiDocument({
            ...sources,
            adapterRoutes: [...sources.adapterRoutes, ...DOCS_ROUTES],
            comments,
          }),
        ),
      ),
    );
    documentBody.catch(() => {
      documentBody = undefined;
    });
    return documentBody;
  };
  const cache = new Map<string, Buffer>();
  const types = new Map([[OPENAPI_PATH, "application/json"]]);
  for (const [url, file] of FILES) types.set(url, file.type);

  const serve =
    (url: string): AdapterServe =>
    async (req, res) => {
      let body = url === OPENAPI_PATH ? await openApiBody() : cache.get(url);
      if (!body) {
        body = await readFile(FILES.get(url)!.path);
        cache.set(url, body);
      }
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        "content-type": types.get(url)!,
        "content-length": String(body.length),
        "cache-control": "no-cache",
      });
      if (req.method === "HEAD") res.end();
      else res.end(body);
    };
  return DOCS_ROUTES.map((route) => ({ ...route, serve: serve(route.path) }));
}
