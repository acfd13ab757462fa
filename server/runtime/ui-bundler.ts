import { createHash } from "node:crypto";
import { basename, dirname, extname } from "node:path";
import { type BuildFailure, build, formatMessages, type Message, type Plugin } from "esbuild";
import type { Logger } from "../logger.js";
import { type UiBundleSpec, type UiConfig, uiGlobalName } from "./graph-config-ui.js";
import { COMPONENT_NAMES_EXPORT, componentNamesOf } from "./ui-component-names.js";

/**
 * Bundles the graphs file's `ui` modules for the browser, once per process at start, into memory.
 * Each bundle is an IIFE that defines the global `__LGUI_<name>` with `render(component,
 * shadowRootId)`: it attaches the component to the shadow root `LoadExternalComponent` created and
 * hands it to the host page's store (`Symbol.for("LGUI_EXT_STORE")`). React, the SDK and
 * `ui_config.shared` are not bundled: the bundle asks the host page for them through
 * `Symbol.for("LGUI_REQUIRE")`, which `@langchain/langgraph-sdk/react-ui` installs, so the
 * component renders with the page's own React. CSS the module imports becomes `entrypoint.css`.
 */

/** One file of a bundle, ready to serve. */
export interface UiAsset {
  readonly body: Buffer;
  /** Its `Content-Type`. */
  readonly contentType: string;
  /** A strong ETag of its bytes. */
  readonly etag: string;
}

/** The bundle of one `ui` entry. */
export interface UiBundle {
  /** The `ui` key. */
  readonly name: string;
  /** The global the script defines (`__LGUI_<name>`). */
  readonly globalName: string;
  /** Its files by base name: `entrypoint.js`, and `entrypoint.css` when the module imports CSS. */
  readonly files: ReadonlyMap<string, UiAsset>;
  /** The module's component names; undefined when they could not be listed (any name is accepted). */
  readonly components: ReadonlySet<string> | undefined;
  /** Why {@link components} is undefined. */
  readonly unlisted?: string;
}

/** Every bundle a process serves, by `ui` key. */
export interface UiBundles {
  get(name: string): UiBundle | undefined;
  /** The `ui` keys, in file order. */
  names(): string[];
}

/** Thrown when a `ui` module does not bundle: names the entry and its file, with esbuild's messages. */
export class UiBundleError extends Error {
  constructor(spec: UiBundleSpec, detail: string) {
    super(`generative UI "ui.${spec.name}" (${spec.file}) does not bundle:\n${detail}`);
    this.name = "UiBundleError";
  }
}

/** Modules every bundle takes from the host page: what `LGUI_REQUIRE` of the SDK's react-ui answers. */
const ALWAYS_SHARED = ["react", "react-dom", "@langchain/langgraph-sdk"] as const;

/**
 * What a shared module's stand-in calls while esbuild bundles; replaced in the output by
 * {@link HOST_REQUIRE}. Written as the expression itself, esbuild would put a pure-call comment
 * inside it (before `Symbol.for`), and the bundle would no longer hold the expression the JS
 * server's bundles hold (clients and tests look for it as it is).
 */
const REQUIRE_PLACEHOLDER = "__agentplaneLguiRequire__";
/** How a bundle asks the host page for a shared module: the SDK's react-ui installs it. */
const HOST_REQUIRE = 'globalThis[Symbol.for("LGUI_REQUIRE")]';

/**
 * Small binary assets a component imports are inlined as data URLs: a file URL would resolve
 * against the host page's origin, not this server's.
 */
const INLINED_ASSETS = [".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".woff", ".woff2", ".ttf"];

/** Content types by output extension (esbuild emits only these for an entry with CSS imports). */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** Bundles every `ui` entry of `config` (none without one); throws {@link UiBundleError} at the first failure. */
export async function buildUiBundles(config: UiConfig | undefined, log: Logger): Promise<UiBundles> {
  const bundles = new Map<string, UiBundle>();
  if (config && config.bundles.length > 0) {
    const began = performance.now();
    const built = await Promise.all(config.bundles.map((spec) => bundleOne(spec, config.shared)));
    for (const bundle of built) {
      bundles.set(bundle.name, bundle);
      if (!bundle.components)
        log.warn(
          `generative UI "ui.${bundle.name}": its component names cannot be listed, so any name is accepted (${bundle.unlisted})`,
        );
      else if (bundle.components.size === 0)
        log.warn(
          `generative UI "ui.${bundle.name}" exports no components: every component request answers 404`,
        );
    }
    log.info("bundled generative UI", {
      bundles: built.map((b) => ({
        name: b.name,
        bytes: [...b.files.values()].reduce((sum, f) => sum + f.body.length, 0),
        components: b.components ? [...b.components] : "unknown",
      })),
      ms: Math.round(performance.now() - began),
    });
  }
  return { get: (name) => bundles.get(name), names: () => [...bundles.keys()] };
}

async function bundleOne(spec: UiBundleSpec, shared: readonly string[]): Promise<UiBundle> {
  const globalName = uiGlobalName(spec.name);
  let outputs: { path: string; contents: Uint8Array; text: string }[];
  try {
    const result = await build({
      entryPoints: [{ in: "lgui-entry", out: "entrypoint" }],
      outdir: `/lgui/${spec.name}`,
      // esbuild's messages then name files relative to the module's folder.
      absWorkingDir: dirname(spec.file),
      write: false,
      bundle: true,
      platform: "browser",
      format: "iife",
      globalName,
      target: "es2020",
      jsx: "automatic",
      logLevel: "silent",
      loader: Object.fromEntries(INLINED_ASSETS.map((ext) => [ext, "dataurl" as const])),
      plugins: [entryPlugin(spec), sharedModulesPlugin([...ALWAYS_SHARED, ...shared])],
    });
    outputs = result.outputFiles;
  } catch (error) {
    const failure = error as Partial<BuildFailure>;
    if (!Array.isArray(failure.errors))
      throw new UiBundleError(spec, String((error as Error)?.message ?? error));
    throw new UiBundleError(spec, await describe(failure.errors));
  }
  const files = new Map<string, UiAsset>();
  let js = "";
  for (const output of outputs) {
    const name = basename(output.path);
    const contentType = CONTENT_TYPES[extname(name)];
    if (!contentType) continue;
    let body = Buffer.from(output.contents);
    if (name === "entrypoint.js") {
      js = output.text.replaceAll(`${REQUIRE_PLACEHOLDER}(`, `${HOST_REQUIRE}(`);
      body = Buffer.from(js);
    }
    files.set(name, {
      body,
      contentType,
      etag: `"${createHash("sha256").update(body).digest("base64url")}"`,
    });
  }
  const listed = componentNamesOf(js, globalName);
  return {
    name: spec.name,
    globalName,
    files,
    components: "names" in listed ? new Set(listed.names) : undefined,
    ...("reason" in listed ? { unlisted: listed.reason } : {}),
  };
}

/**
 * The bundle's entry: the user's module's default export (component name → component), the
 * `render` function the served HTML calls once the script has loaded, and the component names.
 */
function entryPlugin(spec: UiBundleSpec): Plugin {
  const contents = `
import components from ${JSON.stringify(spec.file)};
const STORE = Symbol.for("LGUI_EXT_STORE");
export const ${COMPONENT_NAMES_EXPORT} = components && typeof components === "object" ? Object.keys(components) : [];
export function render(name, shadowRootId) {
  const host = document.getElementById(shadowRootId);
  if (!host || !host.shadowRoot) throw new Error("generative UI: no shadow root with id " + shadowRootId);
  if (!window[STORE]) throw new Error("generative UI: the page has not loaded @langchain/langgraph-sdk/react-ui");
  const target = document.createElement("div");
  host.shadowRoot.appendChild(target);
  window[STORE].respond(shadowRootId, components[name], target);
}
`;
  return {
    name: "lgui-entry",
    setup(b) {
      b.onResolve({ filter: /^lgui-entry$/ }, () => ({ path: spec.file, namespace: "lgui-entry" }));
      b.onLoad({ filter: /.*/, namespace: "lgui-entry" }, () => ({
        contents,
        loader: "js",
        resolveDir: dirname(spec.file),
      }));
    },
  };
}

/**
 * Imports of a shared module (or a subpath of one, such as `react/jsx-runtime`) become a CommonJS
 * module that asks the host page for it, so esbuild's interop gives named and default imports.
 */
function sharedModulesPlugin(shared: readonly string[]): Plugin {
  const isShared = (path: string) => shared.some((name) => path === name || path.startsWith(`${name}/`));
  return {
    name: "lgui-shared",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (args) =>
        args.namespace !== "lgui-shared" && isShared(args.path)
          ? { path: args.path, namespace: "lgui-shared" }
          : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: "lgui-shared" }, (args) => ({
        contents: `module.exports = ${REQUIRE_PLACEHOLDER}(${JSON.stringify(args.path)});`,
        loader: "js",
      }));
    },
  };
}

async function describe(messages: Message[]): Promise<string> {
  const lines = await formatMessages(messages, { kind: "error", color: false });
  return lines.join("").trimEnd();
}
