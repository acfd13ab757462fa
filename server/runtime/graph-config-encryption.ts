import { isAbsolute, resolve } from "node:path";
import { isRecord, kind } from "../settings/json-shape.js";

/** The graphs file's `encryption` section: the module holding the custom encryption handlers. */
export interface EncryptionConfig {
  /** Absolute path of the module holding the handlers object. */
  readonly file: string;
  /** The export holding it (`default` when the path names none). */
  readonly exportName: string;
}

/**
 * Validates the graphs file's `encryption` value (`{"path": "./encryption.ts:encryption"}`, custom
 * encryption at rest); `path` resolves against `dir`, the graphs file's folder. Problems are
 * recorded, each naming its key; undefined when there is no section or it is invalid.
 */
export function parseEncryptionConfig(
  raw: unknown,
  dir: string,
  problems: string[],
): EncryptionConfig | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isRecord(raw)) {
    problems.push(
      `encryption: must be an object such as {"path": "./encryption.ts:encryption"}, got ${kind(raw)}`,
    );
    return undefined;
  }
  for (const key of Object.keys(raw))
    if (key !== "path") problems.push(`encryption.${key}: unknown key; encryption takes "path"`);
  const path = raw.path;
  if (typeof path !== "string" || path.trim() === "") {
    problems.push(
      `encryption.path: required, a string such as "./encryption.ts:encryption"${path === undefined ? "" : `, got ${kind(path)}`}`,
    );
    return undefined;
  }
  // The export follows the last ":" unless that colon belongs to a Windows drive ("C:\...").
  const colon = path.lastIndexOf(":");
  const hasExport = colon > 1 || (colon === 1 && !isAbsolute(path));
  const exportName = hasExport ? path.slice(colon + 1) : "default";
  if (!/^[A-Za-z_$][\w$]*$/.test(exportName)) {
    problems.push(`encryption.path: "${exportName}" is not a valid export name (in "${path}")`);
    return undefined;
  }
  return { file: resolve(dir, hasExport ? path.slice(0, colon) : path), exportName };
}
