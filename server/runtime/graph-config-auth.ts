import { isAbsolute, resolve } from "node:path";
import { isRecord, kind } from "../settings/json-shape.js";

/** The graphs file's `auth` section: the custom `Auth` object and how Studio signs in. */
export interface AuthConfig {
  /** Absolute path of the module holding the `Auth` object. */
  readonly file: string;
  /** The export holding it (`default` when the path names none). */
  readonly exportName: string;
  /** `auth.disable_studio_auth`: Studio requests (`x-auth-scheme: langsmith`) go through the handlers too. */
  readonly disableStudioAuth: boolean;
}

/** Keys of the `auth` section agentplane reads; any other key is a mistake worth stopping for. */
const AUTH_KEYS = new Set(["path", "disable_studio_auth"]);
/** Keys LangGraph's Python server reads there that have no meaning here (OpenAPI security docs). */
const IGNORED_AUTH_KEYS = new Set(["openapi", "cache"]);

/**
 * Validates the graphs file's `auth` value; `path` ("./auth.ts:auth") resolves against `dir`, the
 * graphs file's folder. Problems are recorded, each naming its key; undefined when there is no
 * section or it is invalid.
 */
export function parseAuthConfig(raw: unknown, dir: string, problems: string[]): AuthConfig | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isRecord(raw)) {
    problems.push(`auth: must be an object such as {"path": "./auth.ts:auth"}, got ${kind(raw)}`);
    return undefined;
  }
  for (const key of Object.keys(raw))
    if (!AUTH_KEYS.has(key) && !IGNORED_AUTH_KEYS.has(key))
      problems.push(`auth.${key}: unknown key; auth takes "path" and "disable_studio_auth"`);
  const disable = raw.disable_studio_auth ?? false;
  if (typeof disable !== "boolean")
    problems.push(`auth.disable_studio_auth: must be true or false, got ${kind(disable)}`);
  const path = raw.path;
  if (typeof path !== "string" || path.trim() === "") {
    problems.push(
      `auth.path: required, a string such as "./auth.ts:auth"${path === undefined ? "" : `, got ${kind(path)}`}`,
    );
    return undefined;
  }
  // The export follows the last ":" unless that colon belongs to a Windows drive ("C:\...").
  const colon = path.lastIndexOf(":");
  const hasExport = colon > 1 || (colon === 1 && !isAbsolute(path));
  const exportName = hasExport ? path.slice(colon + 1) : "default";
  if (!/^[A-Za-z_$][\w$]*$/.test(exportName)) {
    problems.push(`auth.path: "${exportName}" is not a valid export name (in "${path}")`);
    return undefined;
  }
  return {
    file: resolve(dir, hasExport ? path.slice(0, colon) : path),
    exportName,
    disableStudioAuth: disable === true,
  };
}
