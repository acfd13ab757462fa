import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { CallbackManager } from "@langchain/core/callbacks/manager";
import { describe, expect, it } from "vitest";
import {
  installLinearCallbackManagerCopy,
  isCheckedLibraryCopy,
  libraryCallbackManagerCopy,
  linearCallbackManagerCopy,
} from "./langchain-callback-manager-copy.js";

class Named extends BaseCallbackHandler {
  constructor(readonly name: string) {
    super();
  }
}

/** What a manager holds, with each metadata object's own keys in order and their descriptors. */
function shape(manager: CallbackManager) {
  const describeObject = (o: Record<string, unknown>) => ({
    keys: Reflect.ownKeys(o),
    descriptors: Object.getOwnPropertyDescriptors(o),
    prototype: Object.getPrototypeOf(o),
  });
  return {
    parent: manager._parentRunId,
    handlers: manager.handlers.map((h) => h.name),
    inheritableHandlers: manager.inheritableHandlers.map((h) => h.name),
    tags: manager.tags,
    inheritableTags: manager.inheritableTags,
    metadata: describeObject(manager.metadata),
    inheritableMetadata: describeObject(manager.inheritableMetadata),
  };
}

/** A manager with handlers, tags and metadata, some of each local only. */
function sample(): CallbackManager {
  const manager = new CallbackManager("parent-run");
  manager.addHandler(new Named("a"), true);
  manager.addHandler(new Named("b"), false);
  manager.addHandler(new Named("console_callback_handler"), true);
  manager.addTags(["t1", "t2"]);
  manager.addTags(["local", "t1"], false);
  manager.addMetadata({ run_id: "r", 10: "numeric", nested: { deep: [1, 2] }, shared: 1 });
  manager.addMetadata({ langgraph_step: 1, shared: "local value" }, false);
  manager.addMetadata(JSON.parse('{"__proto__": {"polluted": true}, "z": null}') as Record<string, unknown>);
  return manager;
}

describe("linear CallbackManager copy", () => {
  it("is in place of the library's checked copy once installed", () => {
    expect(isCheckedLibraryCopy(libraryCallbackManagerCopy)).toBe(true);
    expect(installLinearCallbackManagerCopy()).toBe(true);
    expect(CallbackManager.prototype.copy).toBe(linearCallbackManagerCopy);
    expect(isCheckedLibraryCopy(linearCallbackManagerCopy)).toBe(false);
  });

  it("gives the manager the library's copy gives, with and without additional handlers", () => {
    const cases: [Named[], boolean][] = [
      [[], true],
      [[new Named("extra")], true],
      [[new Named("extra"), new Named("other")], false],
      // Skipped by both: the manager already has a console handler of that name.
      [[new Named("console_callback_handler")], true],
    ];
    for (const [additional, inherit] of cases) {
      const manager = sample();
      const ours = linearCallbackManagerCopy.call(manager, additional, inherit);
      const theirs = libraryCallbackManagerCopy.call(manager, additional, inherit);
      expect(shape(ours)).toEqual(shape(theirs));
      expect(ours.handlers).toEqual(theirs.handlers);
    }
  });

  it("keeps `__proto__` a metadata key and leaves the copy's prototype alone", () => {
    const copy = linearCallbackManagerCopy.call(sample());
    expect(Object.getPrototypeOf(copy.metadata)).toBe(Object.prototype);
    expect(Object.hasOwn(copy.metadata, "__proto__")).toBe(true);
    expect((copy.metadata as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.hasOwn(copy.inheritableMetadata, "__proto__")).toBe(true);
  });

  it("gives a copy whose metadata is its own: changing it leaves the original alone", () => {
    const manager = sample();
    const copy = linearCallbackManagerCopy.call(manager);
    copy.addMetadata({ added: true });
    copy.metadata.run_id = "changed";
    expect(manager.metadata.added).toBeUndefined();
    expect(manager.metadata.run_id).toBe("r");
    expect(manager.inheritableMetadata.added).toBeUndefined();
  });
});
