import { runInNewContext } from "node:vm";

/**
 * Lists the component names of a generative-UI bundle by running it once in an empty V8 context,
 * so that `POST /ui/{assistant_id}` can answer 404 for a name the module does not export. The bundle
 * is the operator's own code (like the graphs, which run in-process); the context only keeps it
 * from seeing the server's globals. The shared modules (React, the SDK, `ui_config.shared`) are
 * stand-ins that accept any use, since a module normally only defines components at load time;
 * one that needs a browser while loading (`document`, `window`) cannot be listed, and every name
 * is then accepted (the caller logs why).
 */

/** How long loading a bundle may take: defining components is quick; a loop at load time is a bug. */
const EVALUATION_TIMEOUT_MS = 2_000;

/** What the bundle's entry exports beside `render`: the keys of the module's default export. */
export const COMPONENT_NAMES_EXPORT = "componentNames";

/** The component names, or why they cannot be known. */
export type ComponentNames = { readonly names: readonly string[] } | { readonly reason: string };

/** Runs `js` (an IIFE assigning `globalName`) and reads `globalName.componentNames`. */
export function componentNamesOf(js: string, globalName: string): ComponentNames {
  const context: Record<PropertyKey, unknown> = {
    [Symbol.for("LGUI_REQUIRE")]: () => permissiveStub(),
  };
  try {
    runInNewContext(js, context, { timeout: EVALUATION_TIMEOUT_MS, filename: `${globalName}.js` });
  } catch (error) {
    return { reason: `loading the bundle outside a browser failed: ${(error as Error)?.message ?? error}` };
  }
  const exported = (context[globalName] as Record<string, unknown> | undefined)?.[COMPONENT_NAMES_EXPORT];
  if (!Array.isArray(exported) || !exported.every((name) => typeof name === "string"))
    return { reason: "the module's default export is not an object of components" };
  return { names: [...exported] };
}

/**
 * A value every operation succeeds on: properties, calls and `new` give another stand-in, and it is
 * its own prototype's source, so a bundler's `Object.create(Object.getPrototypeOf(module))` copy
 * still answers any named import. `then` is absent so that it is never taken for a promise.
 */
function permissiveStub(): unknown {
  const stub: unknown = new Proxy(function stand_in() {}, {
    get: (target, key) => {
      if (key === "then") return undefined;
      if (key === Symbol.toPrimitive) return () => "";
      if (key === "prototype") return Reflect.get(target, key);
      return stub;
    },
    apply: () => stub,
    construct: () => stub as object,
    getPrototypeOf: () => stub as object,
  });
  return stub;
}
