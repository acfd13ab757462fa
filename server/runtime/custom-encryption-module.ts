import { pathToFileURL } from "node:url";
import type {
  CustomEncryptionHandlers,
  EncryptionHandlerContext,
} from "../store/crypto/custom-data-cipher.js";
import type { EncryptionConfig } from "./graph-config-encryption.js";

/**
 * The `context` handler of an `encryption.path` module: derives the encryption context (e.g.
 * `{tenant_id}`) from the authenticated user; may be async. Its result is stored with the data.
 */
export type EncryptionContextHandler = (
  user: Record<string, unknown>,
  ctx: EncryptionHandlerContext,
) => unknown;

/** An `encryption.path` module's handlers, checked. */
export interface CustomEncryptionModule extends CustomEncryptionHandlers {
  readonly context: EncryptionContextHandler | undefined;
}

/** Thrown when the `encryption.path` module cannot be used; stops start-up. */
export class EncryptionModuleError extends Error {
  constructor(config: EncryptionConfig, reason: string, cause?: unknown) {
    super(`encryption.path (${config.file}, export "${config.exportName}") cannot be used: ${reason}`, {
      cause,
    });
    this.name = "EncryptionModuleError";
  }
}

/** A handler of the object, or undefined; anything else but a function is refused. */
function handlerAt(config: EncryptionConfig, holder: unknown, at: string, name: string) {
  if (holder === undefined) return undefined;
  if (typeof holder !== "object" || holder === null)
    throw new EncryptionModuleError(config, `${at} must be an object of handlers ({json, blob})`);
  const fn = (holder as Record<string, unknown>)[name];
  if (fn === undefined) return undefined;
  if (typeof fn !== "function") throw new EncryptionModuleError(config, `${at}.${name} must be a function`);
  return fn as (...args: never[]) => unknown;
}

/** The context the start-up probe encrypts with. */
const PROBE_CONTEXT: EncryptionHandlerContext = { model: null, field: null, metadata: {} };
/** What the start-up probe encrypts: one key whose value any handler must give back after a round trip. */
const PROBE_DOCUMENT = { agentplane_probe: "round trip" };

/**
 * Imports the module of `encryption.path` (tsx runs the process, so `.ts` loads) and reads its
 * export: `{ encrypt: { json, blob }, decrypt: { json, blob }, context }`, each handler optional but
 * encrypt and decrypt in pairs. Each pair is probed once with a round trip, which also refuses a
 * handler that answers a Promise: handlers run synchronously inside the database driver. Refused
 * when the built-in AES is configured too.
 */
export async function loadCustomEncryption(
  config: EncryptionConfig,
  options: { builtInAesConfigured: boolean },
): Promise<CustomEncryptionModule> {
  // Exclusive: data sealed by one could not be read by the other.
  if (options.builtInAesConfigured)
    throw new Error(
      "encryption.path in the graphs file and AGENTPLANE_AES_KEY are both set: use one (unset AGENTPLANE_AES_KEY and AGENTPLANE_AES_JSON_KEYS, or remove the encryption section)",
    );
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(config.file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new EncryptionModuleError(
      config,
      `importing the module failed: ${(error as Error).message}`,
      error,
    );
  }
  const exported = module[config.exportName];
  if (typeof exported !== "object" || exported === null)
    throw new EncryptionModuleError(
      config,
      exported === undefined
        ? `the module has no export "${config.exportName}" (its exports: ${Object.keys(module).join(", ") || "none"})`
        : `the export must be an object { encrypt: { json, blob }, decrypt: { json, blob }, context }`,
    );
  const { encrypt, decrypt, context } = exported as Record<string, unknown>;
  if (context !== undefined && typeof context !== "function")
    throw new EncryptionModuleError(config, "context must be a function (user, ctx) => object");
  const handlers: CustomEncryptionModule = {
    source: `encryption.path (${config.file}:${config.exportName})`,
    encryptJson: handlerAt(config, encrypt, "encrypt", "json") as CustomEncryptionModule["encryptJson"],
    decryptJson: handlerAt(config, decrypt, "decrypt", "json") as CustomEncryptionModule["decryptJson"],
    encryptBlob: handlerAt(config, encrypt, "encrypt", "blob") as CustomEncryptionModule["encryptBlob"],
    decryptBlob: handlerAt(config, decrypt, "decrypt", "blob") as CustomEncryptionModule["decryptBlob"],
    context: context as EncryptionContextHandler | undefined,
  };
  for (const kind of ["json", "blob"] as const) {
    const pair =
      kind === "json"
        ? [handlers.encryptJson, handlers.decryptJson]
        : [handlers.encryptBlob, handlers.decryptBlob];
    if ((pair[0] === undefined) !== (pair[1] === undefined))
      throw new EncryptionModuleError(config, `encrypt.${kind} and decrypt.${kind} must be given together`);
  }
  if (!handlers.encryptJson && !handlers.encryptBlob)
    throw new EncryptionModuleError(
      config,
      "it registers no handlers: give encrypt.json/decrypt.json and/or encrypt.blob/decrypt.blob",
    );
  probe(config, handlers);
  return handlers;
}

/** One synchronous round trip through each pair of handlers. */
function probe(config: EncryptionConfig, handlers: CustomEncryptionModule): void {
  const run = (name: string, fn: () => unknown): unknown => {
    let out: unknown;
    try {
      out = fn();
    } catch (error) {
      throw new EncryptionModuleError(config, `${name} threw on a probe: ${(error as Error).message}`, error);
    }
    if (typeof (out as { then?: unknown } | null)?.then === "function")
      throw new EncryptionModuleError(
        config,
        `${name} returned a Promise: handlers must be synchronous (fetch keys at module load with top-level await)`,
      );
    return out;
  };
  const { encryptJson, decryptJson, encryptBlob, decryptBlob } = handlers;
  if (encryptJson && decryptJson) {
    const sealed = run("encrypt.json", () => encryptJson(PROBE_CONTEXT, { ...PROBE_DOCUMENT }));
    const opened = run("decrypt.json", () => decryptJson(PROBE_CONTEXT, sealed as Record<string, unknown>));
    if (JSON.stringify(opened) !== JSON.stringify(PROBE_DOCUMENT))
      throw new EncryptionModuleError(config, "decrypt.json did not give back what encrypt.json encrypted");
  }
  if (encryptBlob && decryptBlob) {
    const bytes = Buffer.from("agentplane probe");
    const sealed = run("encrypt.blob", () => encryptBlob(PROBE_CONTEXT, bytes));
    if (!(sealed instanceof Uint8Array))
      throw new EncryptionModuleError(config, "encrypt.blob must return a Uint8Array");
    const opened = run("decrypt.blob", () => decryptBlob(PROBE_CONTEXT, sealed));
    if (!(opened instanceof Uint8Array) || !Buffer.from(opened).equals(bytes))
      throw new EncryptionModuleError(config, "decrypt.blob did not give back what encrypt.blob encrypted");
  }
}
