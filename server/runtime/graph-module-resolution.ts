import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * Conditions Node's ESM loader matches in a package's `exports`, in its priority order. The
 * `require` condition is left out on purpose: it names the CommonJS build, a second copy of the
 * package's module state.
 */
const ESM_CONDITIONS = new Set(["node", "import", "default"]);

/**
 * Modules already imported, by importing file and specifier: after the first time, a schemas call
 * costs a map lookup. A handful of entries (one per graph module).
 */
const imported = new Map<string, Promise<unknown>>();

/**
 * Imports `specifier` (a package subpath such as `@langchain/langgraph/zod/schema`) the way an ES
 * module at `fromFile` would import it: the copy in the graph's own project, which is the one
 * holding the graph's module state (zod registries, for one). Falls back to agentplane's own copy
 * when the graph's project has no such package or does not export that subpath.
 */
export async function importFromGraphProject<T>(fromFile: string, specifier: string): Promise<T> {
  const key = `${fromFile}\0${specifier}`;
  let module = imported.get(key);
  if (!module) {
    module = resolveEsmEntry(fromFile, specifier).then((file) =>
      file ? import(pathToFileURL(file).href) : import(specifier),
    );
    imported.set(key, module);
  }
  return (await module) as T;
}

/**
 * The file Node's ESM loader would load for `specifier` from `fromFile`, read from the package's
 * `exports`; undefined when that cannot be determined (the caller then imports its own copy).
 */
async function resolveEsmEntry(fromFile: string, specifier: string): Promise<string | undefined> {
  const parts = specifier.split("/");
  const nameLength = specifier.startsWith("@") ? 2 : 1;
  const name = parts.slice(0, nameLength).join("/");
  const subpath = parts.length > nameLength ? `./${parts.slice(nameLength).join("/")}` : ".";
  let manifestPath: string;
  try {
    manifestPath = createRequire(fromFile).resolve(`${name}/package.json`);
  } catch {
    return undefined;
  }
  let exportsField: unknown;
  try {
    exportsField = (JSON.parse(await readFile(manifestPath, "utf8")) as { exports?: unknown }).exports;
  } catch {
    return undefined;
  }
  if (typeof exportsField !== "object" || exportsField === null) return undefined;
  const target = pickCondition((exportsField as Record<string, unknown>)[subpath]);
  return target === undefined ? undefined : join(dirname(manifestPath), target);
}

/** The path an `exports` entry gives under {@link ESM_CONDITIONS}, conditions tried in key order. */
function pickCondition(entry: unknown): string | undefined {
  if (typeof entry === "string") return entry;
  if (Array.isArray(entry)) {
    for (const item of entry) {
      const picked = pickCondition(item);
      if (picked !== undefined) return picked;
    }
    return undefined;
  }
  if (typeof entry !== "object" || entry === null) return undefined;
  for (const [condition, value] of Object.entries(entry)) {
    if (!ESM_CONDITIONS.has(condition)) continue;
    const picked = pickCondition(value);
    if (picked !== undefined) return picked;
  }
  return undefined;
}
