import { Code, ConnectError } from "@connectrpc/connect";
import type { GenerativeUi, UiComponent } from "../services/agents/generative-ui.js";
import type { Authenticator } from "../services/iam/authenticator.js";
import { readJsonBody } from "./body/json-body.js";
import type { IgnoredFieldsSink } from "./field-leniency.js";
import { type AdapterRoute, bindAdapter, type HttpAdapter } from "./http-adapter.js";
import { requestHeaders, requestOrigin } from "./request-headers.js";
import type { NodeServerRequest } from "./rest/node-types.js";

/**
 * Generative UI over HTTP, as the LangGraph JS server serves it to `LoadExternalComponent`
 * (`@langchain/langgraph-sdk/react-ui`): `POST /ui/{assistant_id}` with `{"name": component}` answers
 * an HTML fragment (a stylesheet link and a script tag) that the SDK inserts into a shadow root; the
 * script's `onload` renders the component there. The bundle's files are public under
 * `GET /ui/{name}/{file}`, as with the JS server, since a `<script src>` sends no API key.
 */

/** The UI routes. */
export const UI_ROUTES = [
  { methods: ["POST"], path: "/ui/{assistant_id}" },
  { methods: ["GET", "HEAD"], path: "/ui/{name}/{file}" },
] as const satisfies readonly AdapterRoute[];

/** What the UI adapter needs. */
export interface UiAdapterDeps {
  readonly ui: GenerativeUi;
  readonly auth: Authenticator;
  /** Where members of the body other than `name` go: ignored and counted (field-leniency.ts). */
  readonly ignoredFields?: IgnoredFieldsSink;
}

/** The placeholder the SDK replaces (once) with the id of the element whose shadow root it made. */
const SHADOW_ROOT_PLACEHOLDER = "{{shadowRootId}}";

/** Hosts a browser reaches over plain HTTP: a local server has no TLS in front of it. */
const LOCAL_HOSTS = /^(?:localhost|127\.0\.0\.1|\[::1\])(?::\d+)?$/;

/**
 * The files are not versioned by name (`entrypoint.js`), so caches keep them but revalidate every
 * use; the ETag makes that a 304 until the server is restarted with other components.
 */
const FILE_HEADERS = {
  "cache-control": "public, no-cache",
  "x-content-type-options": "nosniff",
  "cross-origin-resource-policy": "cross-origin",
};

/** Serves the UI routes (`http.disable_ui` leaves the adapter out: transport/graphs-file-http.ts). */
export function createUiAdapter({ ui, auth, ignoredFields }: UiAdapterDeps): HttpAdapter {
  return bindAdapter(UI_ROUTES, {
    "/ui/{assistant_id}": async (req, res, { vars }) => {
      const principal = await auth.authenticate(requestHeaders(req));
      const body = await readJsonBody(req);
      if (ignoredFields && typeof body === "object" && body !== null && !Array.isArray(body)) {
        const others = Object.keys(body).filter((key) => key !== "name");
        if (others.length > 0) ignoredFields("ui", others);
      }
      const component = await ui.component(principal, vars.assistant_id ?? "", body);
      const html = componentHtml(component, baseOf(req));
      res.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-length": String(Buffer.byteLength(html)),
        "cache-control": "no-store",
      });
      res.end(html);
    },
    "/ui/{name}/{file}": async (req, res, { vars }) => {
      const name = vars.name ?? "";
      const file = vars.file ?? "";
      const asset = ui.asset(name, file);
      if (!asset) throw new ConnectError(`no generative UI file "${file}" under "${name}"`, Code.NotFound);
      if (matchesEtag(req, asset.etag)) {
        res.writeHead(304, { ...FILE_HEADERS, etag: asset.etag });
        res.end();
        return;
      }
      res.writeHead(200, {
        ...FILE_HEADERS,
        "content-type": asset.contentType,
        "content-length": String(asset.body.length),
        etag: asset.etag,
      });
      if (req.method === "HEAD") res.end();
      else res.end(asset.body);
    },
  });
}

/**
 * The fragment the SDK inserts: the bundle's stylesheet (when it has one) and its script, whose
 * `onload` renders the component into the shadow root. The shape is the LangGraph JS server's.
 */
export function componentHtml({ bundle, name }: UiComponent, base: string): string {
  const lines: string[] = [];
  const url = (file: string) => `${base}/ui/${bundle.name}/${file}`;
  for (const file of bundle.files.keys())
    if (file.endsWith(".css")) lines.push(`<link rel="stylesheet" href="${url(file)}" />`);
  const render = `${bundle.globalName}.render(${JSON.stringify(name)}, "${SHADOW_ROOT_PLACEHOLDER}")`;
  lines.push(`<script src="${url("entrypoint.js")}" onload='${escapeSingleQuoted(render)}'></script>`);
  return lines.join("\n");
}

/**
 * Where the page finds this server's files: the scheme a proxy names in `X-Forwarded-Proto`, else
 * `http:` for a local host, else scheme-relative (`//host`) so an HTTPS page behind a TLS proxy
 * loads them over HTTPS.
 */
function baseOf(req: NodeServerRequest): string {
  const origin = requestOrigin(req);
  const host = origin.slice(origin.indexOf("//") + 2);
  if (req.headers["x-forwarded-proto"] !== undefined || LOCAL_HOSTS.test(host)) return origin;
  return `//${host}`;
}

/** True when `If-None-Match` lists `etag` (or is `*`). */
function matchesEtag(req: NodeServerRequest, etag: string): boolean {
  const header = req.headers["if-none-match"];
  if (typeof header !== "string") return false;
  return header
    .split(",")
    .map((tag) => tag.trim().replace(/^W\//, ""))
    .some((tag) => tag === etag || tag === "*");
}

/** Text for a single-quoted HTML attribute: only `&` and `'` could end or change it. */
function escapeSingleQuoted(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/'/g, "&#39;");
}
