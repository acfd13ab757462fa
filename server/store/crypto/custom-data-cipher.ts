import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "../../logger.js";
import { contextOfDocument } from "../postgres/query-context-tags.js";
import { currentEncryptionContext, type EncryptionContextValue } from "./encryption-scope.js";
import { isObject, RESERVED_JSON_KEYS, type StoredDataCipher, toJsonable } from "./stored-data-cipher.js";

/**
 * What custom encryption handlers receive (the shape of LangGraph's `EncryptionContext`): `metadata`
 * is what the `context` handler derived from the caller who wrote the data. agentplane encrypts in
 * its database driver, below the point where it knows which resource or column a document belongs
 * to, so `model` and `field` are always null.
 */
export interface EncryptionHandlerContext {
  readonly model: null;
  readonly field: null;
  readonly metadata: EncryptionContextValue;
}

/** The handlers of an `encryption.path` module (server/runtime/custom-encryption-module.ts). */
export interface CustomEncryptionHandlers {
  /** Names the module in errors and logs (`encryption.path (./encryption.ts:encryption)`). */
  readonly source: string;
  readonly encryptJson?: (ctx: EncryptionHandlerContext, data: Record<string, unknown>) => unknown;
  readonly decryptJson?: (ctx: EncryptionHandlerContext, data: Record<string, unknown>) => unknown;
  readonly encryptBlob?: (ctx: EncryptionHandlerContext, data: Uint8Array) => unknown;
  readonly decryptBlob?: (ctx: EncryptionHandlerContext, data: Uint8Array) => unknown;
}

/** Starts every JSON value an encrypt handler changed; distinct from the built-in cipher's prefix. */
export const CUSTOM_SEALED_PREFIX = "$agentplane-enc:";
/** Marks the serializer type of a checkpoint blob sealed by the custom blob handler. */
const SEALED_BLOB_TYPE = "cenc:";
/** Bytes of the length of the context stored in front of a sealed blob. */
const BLOB_HEADER_BYTES = 4;
/**
 * Keys agentplane reads inside stored JSON with SQL, never passed to the handlers: the built-in
 * cipher's reserved keys, and the assistant and A2A task ids it looks documents up by (`@>`).
 */
const RESERVED_KEYS: ReadonlySet<string> = new Set([...RESERVED_JSON_KEYS, "assistant_id", "a2a_task_id"]);

/** What is stored for one value the encrypt handler changed: the context and the handler's output. */
interface SealedValue {
  c: EncryptionContextValue | null;
  v: unknown;
}

/**
 * A {@link StoredDataCipher} running the graphs file's custom handlers behind the same seam as the
 * built-in one (every JSON parameter and result of the pool, stream events, checkpoints).
 *
 * A JSON document is the top-level object of a column's value; a top-level array is a batch of rows
 * (`jsonb_to_recordset` input), whose object fields are documents. encrypt.json gets the document
 * without the reserved keys and must answer an object with exactly the same keys; each value it
 * changed is stored as {@link CUSTOM_SEALED_PREFIX}`<base64 of {c: context, v: value}>`, so every value
 * carries the context it was encrypted with (documents merged from different writers still decrypt)
 * and values it left alone stay plain (filters on them keep working). Handlers run synchronously
 * inside the driver's serializer: one that returns a Promise fails the write, naming the handler.
 */
export function createCustomDataCipher(handlers: CustomEncryptionHandlers, log: Logger): StoredDataCipher {
  const fail = (handler: string, reason: string, error?: unknown): ConnectError => {
    log.error("custom encryption handler failed; nothing was stored or answered", {
      module: handlers.source,
      handler,
      reason,
      ...(error === undefined ? {} : { error }),
    });
    return new ConnectError(
      `${handlers.source}: the ${handler} handler ${reason}; the data was neither stored nor answered`,
      Code.Internal,
    );
  };
  const call = <T>(handler: string, fn: (() => unknown) | undefined, check: (out: unknown) => T): T => {
    let out: unknown;
    try {
      out = fn?.();
    } catch (error) {
      throw fail(handler, `threw: ${(error as Error)?.message ?? String(error)}`, error);
    }
    if (typeof (out as { then?: unknown } | null)?.then === "function")
      throw fail(
        handler,
        "returned a Promise: handlers must be synchronous (load keys at module load with top-level await)",
      );
    return check(out);
  };
  const sameKeys = (handler: string, input: Record<string, unknown>) => (out: unknown) => {
    if (!isObject(out)) throw fail(handler, `must return an object, returned ${typeof out}`);
    const inKeys = Object.keys(input).sort();
    const outKeys = Object.keys(out).sort();
    if (inKeys.length !== outKeys.length || inKeys.some((k, i) => k !== outKeys[i]))
      throw fail(
        handler,
        `must keep the key set unchanged (got keys ${JSON.stringify(outKeys)} for ${JSON.stringify(inKeys)})`,
      );
    return out;
  };
  const ctxOf = (metadata: EncryptionContextValue | null): EncryptionHandlerContext => ({
    model: null,
    field: null,
    metadata: metadata ?? {},
  });

  /** The context of a document: the one pinned when its query was issued, else the current one. */
  const contextFor = (document: object): EncryptionContextValue | null => {
    const pinned = contextOfDocument(document);
    return pinned !== undefined ? pinned : (currentEncryptionContext() ?? null);
  };

  const encryptDocument = (
    original: Record<string, unknown>,
    context: EncryptionContextValue | null,
  ): Record<string, unknown> => {
    const plain = JSON.parse(JSON.stringify(original)) as Record<string, unknown>;
    const data: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(plain)) if (!RESERVED_KEYS.has(key)) data[key] = value;
    if (Object.keys(data).length === 0 || !handlers.encryptJson) return plain;
    const encrypt = handlers.encryptJson;
    const out = call(
      "encrypt.json",
      () => encrypt(ctxOf(context), { ...data }),
      sameKeys("encrypt.json", data),
    );
    const result: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(plain)) {
      const sealed = out[key];
      result[key] =
        !(key in data) || sealed === value || JSON.stringify(sealed) === JSON.stringify(value)
          ? value
          : CUSTOM_SEALED_PREFIX + Buffer.from(JSON.stringify({ c: context, v: sealed })).toString("base64");
    }
    return result;
  };

  /** A column value: a document, or a batch of rows whose object fields are documents. */
  const encryptValue = (value: unknown): unknown => {
    const jsonable = toJsonable(value);
    if (isObject(jsonable)) return encryptDocument(jsonable, contextFor(value as object));
    if (!Array.isArray(jsonable)) return jsonable;
    const context = contextFor(jsonable);
    return jsonable.map((row) => {
      const plainRow = toJsonable(row);
      if (!isObject(plainRow)) return plainRow;
      const out: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(plainRow)) {
        if (field === undefined) continue;
        const plainField = toJsonable(field);
        const own = typeof field === "object" && field !== null ? contextOfDocument(field) : undefined;
        out[key] = isObject(plainField)
          ? encryptDocument(plainField, own !== undefined ? own : context)
          : plainField;
      }
      return out;
    });
  };

  /** JSON text stored by hand (stream events, checkpoint metadata): a document, or a list of them. */
  const encryptText = (text: string): string => {
    const value: unknown = JSON.parse(text);
    const context = currentEncryptionContext() ?? null;
    if (isObject(value)) return JSON.stringify(encryptDocument(value, context));
    if (Array.isArray(value))
      return JSON.stringify(value.map((item) => (isObject(item) ? encryptDocument(item, context) : item)));
    return text;
  };

  const openSealed = (text: string): SealedValue =>
    JSON.parse(Buffer.from(text.slice(CUSTOM_SEALED_PREFIX.length), "base64").toString()) as SealedValue;

  /** Opens every sealed value at any depth: read results nest documents (jsonb_agg, json_build_object). */
  const decrypt = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(decrypt);
    if (!isObject(value)) return value;
    const out: Record<string, unknown> = {};
    const groups = new Map<
      string,
      { context: EncryptionContextValue | null; data: Record<string, unknown> }
    >();
    for (const [key, inner] of Object.entries(value)) {
      if (typeof inner === "string" && inner.startsWith(CUSTOM_SEALED_PREFIX)) {
        const sealed = openSealed(inner);
        const groupKey = JSON.stringify(sealed.c);
        const group = groups.get(groupKey) ?? { context: sealed.c, data: {} };
        group.data[key] = sealed.v;
        groups.set(groupKey, group);
        out[key] = undefined;
      } else out[key] = decrypt(inner);
    }
    for (const { context, data } of groups.values()) {
      const decryptJson = handlers.decryptJson;
      if (!decryptJson)
        throw fail("decrypt.json", "is missing but stored data was encrypted by encrypt.json");
      const opened = call(
        "decrypt.json",
        () => decryptJson(ctxOf(context), { ...data }),
        sameKeys("decrypt.json", data),
      );
      Object.assign(out, opened);
    }
    return out;
  };

  return {
    jsonKeys: new Set(),
    sealedPrefix: CUSTOM_SEALED_PREFIX,
    encryptJson: encryptValue,
    decryptJson: decrypt,
    encryptJsonText: encryptText,
    stringifyEncrypted: (value) => JSON.stringify(encryptValue(value)),
    decryptJsonText: (text) =>
      text.includes(CUSTOM_SEALED_PREFIX) ? JSON.stringify(decrypt(JSON.parse(text))) : text,
    encryptEmbeddedJson(text) {
      const start = text.search(/[[{]/);
      if (start < 0) return text;
      let embedded: string;
      try {
        embedded = JSON.stringify(JSON.parse(text.slice(start)));
      } catch {
        return text;
      }
      return text.slice(0, start) + encryptText(embedded);
    },
    sealBlob(type, bytes) {
      const encryptBlob = handlers.encryptBlob;
      if (!encryptBlob) return [type, bytes];
      const context = currentEncryptionContext() ?? null;
      const sealed = call(
        "encrypt.blob",
        () => encryptBlob(ctxOf(context), bytes),
        (out) => {
          if (!(out instanceof Uint8Array))
            throw fail("encrypt.blob", "must return a Uint8Array (or Buffer)");
          return out;
        },
      );
      const header = Buffer.from(JSON.stringify(context));
      const length = Buffer.alloc(BLOB_HEADER_BYTES);
      length.writeUInt32BE(header.length);
      return [SEALED_BLOB_TYPE + type, Buffer.concat([length, header, sealed])];
    },
    openBlob(type, bytes) {
      if (!type.startsWith(SEALED_BLOB_TYPE)) return [type, bytes];
      const decryptBlob = handlers.decryptBlob;
      if (!decryptBlob)
        throw fail("decrypt.blob", "is missing but a checkpoint was encrypted by encrypt.blob");
      const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const headerLength = buffer.readUInt32BE(0);
      const context = JSON.parse(
        buffer.subarray(BLOB_HEADER_BYTES, BLOB_HEADER_BYTES + headerLength).toString(),
      ) as EncryptionContextValue | null;
      const sealed = buffer.subarray(BLOB_HEADER_BYTES + headerLength);
      const opened = call(
        "decrypt.blob",
        () => decryptBlob(ctxOf(context), sealed),
        (out) => {
          if (!(out instanceof Uint8Array))
            throw fail("decrypt.blob", "must return a Uint8Array (or Buffer)");
          return out;
        },
      );
      return [type.slice(SEALED_BLOB_TYPE.length), opened];
    },
    encryptedKeyIn: () => undefined,
  };
}
