import { describe, expect, it } from "vitest";
import { createLogger } from "../../logger.js";
import {
  CUSTOM_SEALED_PREFIX,
  type CustomEncryptionHandlers,
  createCustomDataCipher,
} from "./custom-data-cipher.js";
import { runWithEncryptionContext } from "./encryption-scope.js";

const log = createLogger("error", () => {});
/** Reversible and context-bound: `<tenant>:<json reversed>`. */
const seal = (tenant: unknown, value: unknown) =>
  `${String(tenant)}:${[...JSON.stringify(value)].reverse().join("")}`;
const calls: Record<string, unknown>[] = [];
const handlers: CustomEncryptionHandlers = {
  source: "encryption.path (test)",
  encryptJson: (ctx, data) => {
    calls.push(data);
    return Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, k === "owner" ? v : seal(ctx.metadata.tenant, v)]),
    );
  },
  decryptJson: (ctx, data) =>
    Object.fromEntries(
      Object.entries(data).map(([k, v]) => {
        const [tenant, body] = String(v).split(/:(.*)/s);
        if (tenant !== String(ctx.metadata.tenant)) throw new Error("wrong tenant");
        return [k, JSON.parse([...(body ?? "")].reverse().join(""))];
      }),
    ),
  encryptBlob: (ctx, bytes) =>
    Buffer.concat([Buffer.from(String(ctx.metadata.tenant)), Buffer.from(bytes).reverse()]),
  decryptBlob: (ctx, bytes) => Buffer.from(bytes).subarray(String(ctx.metadata.tenant).length).reverse(),
};
const cipher = createCustomDataCipher(handlers, log);

describe("custom encryption behind the stored-data cipher seam", () => {
  it("seals changed values with their writer's context, keeps unchanged and reserved keys plain", () => {
    calls.length = 0;
    const doc = { owner: "ann", secret: { a: 1 }, thread_id: "t1" };
    const sealed = runWithEncryptionContext({ tenant: "ann" }, () => cipher.encryptJson(doc)) as Record<
      string,
      string
    >;
    expect(sealed.owner).toBe("ann");
    expect(sealed.thread_id).toBe("t1");
    expect(sealed.secret?.startsWith(CUSTOM_SEALED_PREFIX)).toBe(true);
    expect(calls).toEqual([{ owner: "ann", secret: { a: 1 } }]);
    expect(cipher.decryptJson(sealed)).toEqual(doc);
  });

  it("decrypts a document merged from two writers, each value with its own context", () => {
    const ann = runWithEncryptionContext({ tenant: "ann" }, () => cipher.encryptJson({ a: "x" })) as object;
    const bob = runWithEncryptionContext({ tenant: "bob" }, () => cipher.encryptJson({ b: "y" })) as object;
    expect(runWithEncryptionContext({ tenant: "eve" }, () => cipher.decryptJson({ ...ann, ...bob }))).toEqual(
      { a: "x", b: "y" },
    );
  });

  it("fails a write whose handler changes the key set, throws or answers a Promise, naming the handler", () => {
    const drop = createCustomDataCipher({ ...handlers, encryptJson: () => ({}) }, log);
    expect(() => drop.encryptJson({ a: 1 })).toThrow(/encrypt\.json handler must keep the key set unchanged/);
    const late = createCustomDataCipher({ ...handlers, encryptJson: async (_c, d) => d }, log);
    expect(() => late.stringifyEncrypted({ a: 1 })).toThrow(/encrypt\.json handler returned a Promise/);
    const broken = createCustomDataCipher(
      {
        ...handlers,
        encryptJson: () => {
          throw new Error("kms down");
        },
      },
      log,
    );
    expect(() => broken.encryptJson({ a: 1 })).toThrow(/encrypt\.json handler threw: kms down/);
  });

  it("seals checkpoint blobs with the context and opens them with it", () => {
    const bytes = Buffer.from("checkpoint");
    const [type, sealed] = runWithEncryptionContext({ tenant: "ann" }, () => cipher.sealBlob("json", bytes));
    expect(type).toBe("cenc:json");
    expect(Buffer.from(sealed).includes(bytes)).toBe(false);
    expect(cipher.openBlob(type, sealed)).toEqual(["json", bytes]);
    expect(cipher.openBlob("json", bytes)).toEqual(["json", bytes]);
  });

  it("treats a top-level array as rows whose object fields are documents", () => {
    const rows = [{ key: "k", value: { v: 1 }, namespace: ["a"] }];
    const sealed = runWithEncryptionContext({ tenant: "ann" }, () => cipher.encryptJson(rows)) as Array<
      Record<string, unknown>
    >;
    expect(sealed[0]?.key).toBe("k");
    expect(sealed[0]?.namespace).toEqual(["a"]);
    expect(JSON.stringify(sealed[0]?.value)).toContain(CUSTOM_SEALED_PREFIX);
    expect(cipher.decryptJson(sealed)).toEqual(rows);
  });
});
