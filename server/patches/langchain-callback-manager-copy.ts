/**
 * A linear `CallbackManager.copy` for LangChain's callback managers. The library's copy adds the
 * metadata one key at a time, and every addition spreads both metadata objects again and lists the
 * inheritable keys again. So a copy costs O(keys²) objects and arrays. A graph run with callbacks
 * (run tracing, the callback event stream) copies a manager for the root run, for every task and
 * for every runnable inside a task, each with a dozen metadata keys (the run's ids, LangGraph's
 * `langgraph_*` keys). This was the largest single cost that tracing added to a run in a CPU profile
 * of the runs bench's one-node graph.
 *
 * The replacement gives the same manager: the same handlers and tags, added the same way, and
 * metadata and inheritable metadata with the same keys in the same order. It builds each metadata
 * object once. It replaces only the copy it was checked against (recognised by a hash of its source
 * text). A library upgrade that changes `copy` keeps the library's own until it is checked again:
 * start-up (server/patches/dependency-patches.ts) logs that it fell back, since the library's copy
 * is correct, only slower. Upstream: the quadratic copy is `CallbackManager.copy` in
 * @langchain/core's callbacks/manager.js (addMetadata per key, each spreading both objects).
 */
import { createHash } from "node:crypto";
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { CallbackManager } from "@langchain/core/callbacks/manager";

/**
 * SHA-256 of the source text of `CallbackManager.prototype.copy` in @langchain/core 1.2.13, unchanged
 * through 1.4.0 (the version pinned), whose behaviour {@link linearCallbackManagerCopy} reproduces.
 */
const CHECKED_COPY_SHA256 = "3db910c718ee25f01548e12353dd719adbd631a16e4eabde564615f067fbcc27";
/** The name the library's copy skips an additional handler for when a console handler has it. */
const CONSOLE_HANDLER_NAME = "console_callback_handler";

/** The library's own `copy`, kept to compare against and to restore. */
export const libraryCallbackManagerCopy = CallbackManager.prototype.copy;

/** Defines `key` as an own, enumerable data property, as an object spread does (even `__proto__`). */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__")
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}

/** `CallbackManager.prototype.copy`, building each metadata object once. */
export function linearCallbackManagerCopy(
  this: CallbackManager,
  additionalHandlers: BaseCallbackHandler[] = [],
  inherit = true,
): CallbackManager {
  const manager = new CallbackManager(this._parentRunId);
  for (const handler of this.handlers)
    manager.addHandler(handler, this.inheritableHandlers.includes(handler));
  for (const tag of this.tags) manager.addTags([tag], this.inheritableTags.includes(tag));
  const metadata: Record<string, unknown> = {};
  const inheritableMetadata: Record<string, unknown> = {};
  for (const key of Object.keys(this.metadata)) {
    const value = this.metadata[key];
    define(metadata, key, value);
    // The library keeps a key inheritable when it is an own enumerable key of the inheritable
    // metadata, with the value of `metadata`.
    if (Object.prototype.propertyIsEnumerable.call(this.inheritableMetadata, key))
      define(inheritableMetadata, key, value);
  }
  manager.metadata = metadata;
  manager.inheritableMetadata = inheritableMetadata;
  for (const handler of additionalHandlers) {
    const consoleHandlers = manager.handlers.filter((h) => h.name === CONSOLE_HANDLER_NAME);
    if (consoleHandlers.some((h) => h.name === handler.name)) continue;
    manager.addHandler(handler, inherit);
  }
  return manager;
}

/** Whether the library's copy is the one {@link linearCallbackManagerCopy} was checked against. */
export function isCheckedLibraryCopy(copy: (...args: never[]) => unknown): boolean {
  return createHash("sha256").update(copy.toString()).digest("hex") === CHECKED_COPY_SHA256;
}

/** The name start-up reports this patch by. */
export const CALLBACK_MANAGER_COPY_PATCH = "@langchain/core CallbackManager.prototype.copy";

/**
 * Puts {@link linearCallbackManagerCopy} in place of the library's copy, once, when the library's
 * copy is the checked one; returns whether the linear copy is in place.
 */
export function installLinearCallbackManagerCopy(): boolean {
  const prototype = CallbackManager.prototype;
  if (prototype.copy === linearCallbackManagerCopy) return true;
  if (!isCheckedLibraryCopy(prototype.copy)) return false;
  prototype.copy = linearCallbackManagerCopy;
  return true;
}
