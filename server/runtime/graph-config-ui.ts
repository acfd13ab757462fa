import { dirname, resolve } from "node:path";
import { isRecord, kind } from "../settings/json-shape.js";

/** One `ui` entry of the graphs file: a module whose default export maps component names to components. */
export interface UiBundleSpec {
  /** The key under `ui`: the graph id whose assistants use these components (or a free namespace). */
  readonly name: string;
  /** Absolute path of the module. */
  readonly file: string;
}

/** The graphs file's `ui` and `ui_config` sections. */
export interface UiConfig {
  /** The UI modules, in file order. */
  readonly bundles: readonly UiBundleSpec[];
  /**
   * `ui_config.shared`: module specifiers the host page provides (with `experimental_loadShare`)
   * instead of bundling them, beside React and the SDK, which are always shared.
   */
  readonly shared: readonly string[];
}

/**
 * A `ui` key is a path segment (`/ui/<name>/<file>`) and, with every other character made `_`, part
 * of the bundle's global name: the graph id rule, so any graph id is a valid key.
 */
const UI_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/** A bare or scoped npm module specifier, optionally with a subpath (what an import statement names). */
const MODULE_SPECIFIER = /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*(\/[\w.@-]+)*$/i;

/** The global a `ui` entry's bundle defines in the page: its name with other characters made `_`. */
export function uiGlobalName(name: string): string {
  return `__LGUI_${name.replace(/[^a-zA-Z0-9]/g, "_")}`;
}

/**
 * Validates `ui` (name → module path, relative to the graphs file `file`) and `ui_config`
 * (`{shared: [module, …]}`); every problem is recorded with its key path. Undefined when the file
 * has no `ui`. `graphs` only feeds `warnings`: a key that names no graph is reachable through
 * `LoadExternalComponent`'s `namespace` only.
 */
export function parseUiConfig(
  raw: Record<string, unknown>,
  file: string,
  graphs: readonly { readonly graphId: string }[],
  problems: string[],
  warnings: string[],
): UiConfig | undefined {
  const shared = parseShared(raw.ui_config, problems);
  if (raw.ui === undefined || raw.ui === null) {
    if (raw.ui_config !== undefined && raw.ui_config !== null)
      warnings.push("ui_config is set but there is no ui section: it has no effect");
    return undefined;
  }
  if (!isRecord(raw.ui)) {
    problems.push(`ui: must be an object of name → "./path/to/ui.tsx", got ${kind(raw.ui)}`);
    return undefined;
  }
  const bundles: UiBundleSpec[] = [];
  const globals = new Map<string, string>();
  for (const [name, path] of Object.entries(raw.ui)) {
    const at = `ui.${name}`;
    if (!UI_NAME_PATTERN.test(name)) {
      problems.push(`${at}: a ui name must be 1 to 128 letters, digits, "_", "." or "-"`);
      continue;
    }
    if (typeof path !== "string" || path.trim() === "") {
      problems.push(`${at}: must be the path of a module such as "./src/ui.tsx", got ${kind(path)}`);
      continue;
    }
    const global = uiGlobalName(name);
    const clash = globals.get(global);
    if (clash !== undefined) {
      problems.push(
        `${at}: its bundle's global ${global} is also that of ui.${clash} (names differing only in "_", "." or "-"); rename one`,
      );
      continue;
    }
    globals.set(global, name);
    if (!graphs.some((graph) => graph.graphId === name))
      warnings.push(
        `ui.${name} names no graph: assistants use the ui of their graph id, so only LoadExternalComponent's namespace "${name}" reaches it`,
      );
    bundles.push({ name, file: resolve(dirname(file), path) });
  }
  return { bundles, shared };
}

function parseShared(value: unknown, problems: string[]): string[] {
  if (value === undefined || value === null) return [];
  if (!isRecord(value)) {
    problems.push(
      `ui_config: must be an object such as {"shared": ["my-design-system"]}, got ${kind(value)}`,
    );
    return [];
  }
  for (const key of Object.keys(value))
    if (key !== "shared") problems.push(`ui_config.${key}: unknown key; ui_config has only "shared"`);
  const shared = value.shared;
  if (shared === undefined || shared === null) return [];
  if (!Array.isArray(shared)) {
    problems.push(`ui_config.shared: must be an array of module names, got ${kind(shared)}`);
    return [];
  }
  const names: string[] = [];
  shared.forEach((item, i) => {
    if (typeof item === "string" && MODULE_SPECIFIER.test(item)) names.push(item);
    else
      problems.push(
        `ui_config.shared[${i}]: must be a module name such as "@acme/ui" or "lodash", got ${kind(item)}`,
      );
  });
  return names;
}
