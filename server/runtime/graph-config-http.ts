import { isAbsolute, resolve } from "node:path";
import { isRecord, kind } from "../settings/json-shape.js";

/**
 * The graphs file's `http` keys for a custom HTTP app and the server's HTTP surface: `app`,
 * `mount_prefix`, `cors`, `middleware_order`, `enable_custom_route_auth` and the `disable_*` groups
 * beyond `disable_a2a`/`disable_mcp` (which graph-config.ts reads). Every key is validated; a bad
 * value stops start-up with a message naming the key.
 */

/** Route groups `http.disable_<group>` turns off. */
export const HTTP_ROUTE_GROUPS = [
  "assistants",
  "threads",
  "runs",
  "store",
  "meta",
  "webhooks",
  "ui",
] as const;

/** A route group of {@link HTTP_ROUTE_GROUPS}. */
export type HttpRouteGroup = (typeof HTTP_ROUTE_GROUPS)[number];

/** `http.app`: the user's module and the export holding the app. */
export interface HttpAppSpec {
  /** Absolute path of the module. */
  readonly file: string;
  /** The export named after `:`; undefined: `app`, else `default`. */
  readonly exportName?: string;
  /** The value as written, for messages. */
  readonly text: string;
}

/** `http.cors`: what the graphs file adds to the server's CORS policy. */
export interface HttpCorsConfig {
  readonly allowOrigins?: readonly string[];
  readonly allowMethods?: readonly string[];
  readonly allowHeaders?: readonly string[];
  readonly exposeHeaders?: readonly string[];
  readonly allowCredentials?: boolean;
  /** Seconds a browser may cache a preflight. */
  readonly maxAgeSeconds?: number;
}

/** The keys of this file, as they join graph-config.ts's `HttpConfig`. */
export interface HttpAppConfig {
  /** `http.app`. */
  readonly app?: HttpAppSpec;
  /** `http.mount_prefix`: `/segment[/segment…]`, no trailing slash. */
  readonly mountPrefix?: string;
  /** `http.cors`. */
  readonly cors?: HttpCorsConfig;
  /** `http.middleware_order`; `middleware_first` when unset. */
  readonly middlewareOrder?: "middleware_first" | "auth_first";
  /** `http.enable_custom_route_auth`: custom routes need authentication too. */
  readonly enableCustomRouteAuth?: boolean;
  /** The groups set by `http.disable_<group>: true`. */
  readonly disabledGroups?: readonly HttpRouteGroup[];
}

/** A mount prefix: one or more path segments of URL-safe characters. */
const MOUNT_PREFIX = /^(\/[A-Za-z0-9._~!$&'()*+,;=:@-]+)+$/;
/** A browser origin as `Origin` carries it: scheme, host, optional port; or `*`. */
const ORIGIN = /^https?:\/\/[^/\s,?#@]+$/;
/** An HTTP method or header name: an RFC 9110 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Browsers cap preflight caching at 2 hours (Chromium) or 1 day (Firefox); a day is the most that means anything. */
const MAX_CORS_MAX_AGE_SECONDS = 24 * 60 * 60;

/** Parses the custom-app keys of the `http` section; problems are recorded with their key path. */
export function parseHttpAppConfig(
  http: Record<string, unknown> | undefined,
  dir: string,
  problems: string[],
): HttpAppConfig {
  if (http === undefined) return {};
  const config: { -readonly [K in keyof HttpAppConfig]: HttpAppConfig[K] } = {};
  const app = parseAppSpec(http.app, dir, problems);
  if (app) config.app = app;

  const prefix = http.mount_prefix;
  if (prefix !== undefined && prefix !== null) {
    if (typeof prefix !== "string" || !MOUNT_PREFIX.test(prefix) || prefix.endsWith("/"))
      problems.push(
        `http.mount_prefix: must be a path such as "/my-agent" (starting with "/", no trailing "/", no query), got ${describe(prefix)}`,
      );
    else config.mountPrefix = prefix;
  }

  const order = http.middleware_order;
  if (order !== undefined && order !== null) {
    if (order === "middleware_first" || order === "auth_first") config.middlewareOrder = order;
    else
      problems.push(
        `http.middleware_order: must be "middleware_first" or "auth_first", got ${describe(order)}`,
      );
  }

  const routeAuth = flag(http, "enable_custom_route_auth", problems);
  if (routeAuth !== undefined) config.enableCustomRouteAuth = routeAuth;

  const disabled = HTTP_ROUTE_GROUPS.filter((group) => flag(http, `disable_${group}`, problems) === true);
  if (disabled.length > 0) config.disabledGroups = disabled;

  const cors = parseCors(http.cors, problems);
  if (cors) config.cors = cors;
  return config;
}

function parseAppSpec(value: unknown, dir: string, problems: string[]): HttpAppSpec | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.trim() === "") {
    problems.push(`http.app: must be a string such as "./src/app.ts:app", got ${describe(value)}`);
    return undefined;
  }
  // The export follows the last ":" unless that colon belongs to a Windows drive ("C:\...").
  const colon = value.lastIndexOf(":");
  const hasExport = colon > 1 || (colon === 1 && !isAbsolute(value));
  const exportName = hasExport ? value.slice(colon + 1) : undefined;
  if (exportName !== undefined && !/^[A-Za-z_$][\w$]*$/.test(exportName)) {
    problems.push(`http.app: "${exportName}" is not a valid export name (in "${value}")`);
    return undefined;
  }
  const file = resolve(dir, hasExport ? value.slice(0, colon) : value);
  return { file, text: value, ...(exportName === undefined ? {} : { exportName }) };
}

function parseCors(value: unknown, problems: string[]): HttpCorsConfig | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) {
    problems.push(`http.cors: must be an object, got ${kind(value)}`);
    return undefined;
  }
  const known = [
    "allow_origins",
    "allow_methods",
    "allow_headers",
    "expose_headers",
    "allow_credentials",
    "max_age",
  ];
  for (const key of Object.keys(value))
    if (!known.includes(key))
      problems.push(`http.cors.${key}: unknown key; the keys are ${known.join(", ")}`);
  const cors: { -readonly [K in keyof HttpCorsConfig]: HttpCorsConfig[K] } = {};
  const list = (key: string, valid: RegExp, what: string): string[] | undefined => {
    const items = value[key];
    if (items === undefined || items === null) return undefined;
    if (!Array.isArray(items) || !items.every((item) => typeof item === "string")) {
      problems.push(`http.cors.${key}: must be an array of strings, got ${kind(items)}`);
      return undefined;
    }
    const bad = items.filter((item) => item !== "*" && !valid.test(item));
    if (bad.length > 0) {
      problems.push(`http.cors.${key}: ${bad.map((b) => JSON.stringify(b)).join(", ")} ${what}`);
      return undefined;
    }
    return items;
  };
  const origins = list("allow_origins", ORIGIN, "is no origin; write scheme://host[:port] without a path");
  const methods = list("allow_methods", TOKEN, "is no HTTP method");
  const headers = list("allow_headers", TOKEN, "is no HTTP header name");
  const expose = list("expose_headers", TOKEN, "is no HTTP header name");
  if (origins) cors.allowOrigins = origins;
  if (methods) cors.allowMethods = methods.map((m) => m.toUpperCase());
  if (headers) cors.allowHeaders = headers.map((h) => h.toLowerCase());
  if (expose) cors.exposeHeaders = expose.map((h) => h.toLowerCase());
  const credentials = flag(value, "allow_credentials", problems, "http.cors");
  if (credentials !== undefined) cors.allowCredentials = credentials;
  if (credentials && origins?.includes("*"))
    problems.push(
      'http.cors.allow_credentials: cannot be true with allow_origins ["*"]: any web page could call with its visitors\' cookies; list the origins instead',
    );
  const maxAge = value.max_age;
  if (maxAge !== undefined && maxAge !== null) {
    if (
      typeof maxAge === "number" &&
      Number.isInteger(maxAge) &&
      maxAge >= 0 &&
      maxAge <= MAX_CORS_MAX_AGE_SECONDS
    )
      cors.maxAgeSeconds = maxAge;
    else
      problems.push(
        `http.cors.max_age: must be a whole number of seconds from 0 to ${MAX_CORS_MAX_AGE_SECONDS}, got ${describe(maxAge)}`,
      );
  }
  return cors;
}

function flag(
  parent: Record<string, unknown>,
  key: string,
  problems: string[],
  at = "http",
): boolean | undefined {
  const value = parent[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "boolean") return value;
  problems.push(`${at}.${key}: must be true or false, got ${kind(value)}`);
  return undefined;
}

function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : kind(value);
}
