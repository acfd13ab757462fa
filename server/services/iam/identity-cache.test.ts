import { describe, expect, it } from "vitest";
import { createIdentityCache } from "./identity-cache.js";

/** A cache on a hand-moved clock, and a loader that counts its calls and answers `value`. */
function setup() {
  let now = 1_000_000;
  const cache = createIdentityCache<string>(() => now);
  let loads = 0;
  const loader =
    (value: string, validUntil: number | null = null) =>
    async () => {
      loads += 1;
      return { value, validUntil };
    };
  return {
    cache,
    loader,
    loads: () => loads,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
  };
}

describe("createIdentityCache", () => {
  it("answers a key from memory until it has been kept for 5 s", async () => {
    const t = setup();
    expect(await t.cache.resolve("k", t.loader("a"))).toBe("a");
    t.advance(4_999);
    expect(await t.cache.resolve("k", t.loader("b"))).toBe("a");
    expect(t.loads()).toBe(1);
    t.advance(1);
    expect(await t.cache.resolve("k", t.loader("c"))).toBe("c");
    expect(t.loads()).toBe(2);
  });

  it("keeps keys apart", async () => {
    const t = setup();
    await t.cache.resolve("k1", t.loader("one"));
    expect(await t.cache.resolve("k2", t.loader("two"))).toBe("two");
    expect(await t.cache.resolve("k1", t.loader("other"))).toBe("one");
  });

  it("never keeps a credential past its own expiry, and does not keep one already expired", async () => {
    const t = setup();
    await t.cache.resolve("k", t.loader("a", t.now() + 1_000));
    t.advance(999);
    expect(await t.cache.resolve("k", t.loader("b"))).toBe("a");
    t.advance(1);
    expect(await t.cache.resolve("k", t.loader("c", t.now()))).toBe("c");
    expect(await t.cache.resolve("k", t.loader("d"))).toBe("d");
    expect(t.loads()).toBe(3);
  });

  it("forgets everything on clear", async () => {
    const t = setup();
    await t.cache.resolve("k", t.loader("before"));
    t.cache.clear();
    expect(await t.cache.resolve("k", t.loader("after"))).toBe("after");
  });

  it("does not keep an answer whose lookup was under way when the cache was cleared", async () => {
    const t = setup();
    let release: () => void = () => {};
    const slow = t.cache.resolve("k", async () => {
      await new Promise<void>((done) => {
        release = done;
      });
      return { value: "read before the change", validUntil: null };
    });
    t.cache.clear();
    release();
    // The caller that started before the change still gets its answer; nobody after it does.
    expect(await slow).toBe("read before the change");
    expect(await t.cache.resolve("k", t.loader("read after the change"))).toBe("read after the change");
  });

  it("keeps nothing when the lookup fails", async () => {
    const t = setup();
    await expect(
      t.cache.resolve("k", async () => {
        throw new Error("unknown key");
      }),
    ).rejects.toThrow("unknown key");
    expect(await t.cache.resolve("k", t.loader("a"))).toBe("a");
    expect(t.loads()).toBe(1);
  });
});
