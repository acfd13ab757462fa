import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { applyDependencyPatches, POSTGRES_DRIVER_REPAIR } from "./dependency-patches.js";
import { CALLBACK_MANAGER_COPY_PATCH } from "./langchain-callback-manager-copy.js";
import { applyPgBossManagerPatch, PG_BOSS_MANAGER_PATCH, pgBossManagerPatched } from "./pg-boss-manager.js";
import { installQueryContextTags, QUERY_CONTEXT_TAGS_PATCH } from "./postgres-query-context-tags.js";

/** The installed driver's package folder, as the repair finds it. */
const DRIVER_ROOT = join(dirname(createRequire(import.meta.url).resolve("postgres")), "..", "..");
const copies: string[] = [];
afterAll(async () => {
  for (const dir of copies) await rm(dir, { recursive: true, force: true });
});

/** A copy of the installed driver with the repair's marker taken out of one file. */
async function unrepairedDriver(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "agentplane-driver-"));
  copies.push(dir);
  await cp(DRIVER_ROOT, dir, { recursive: true });
  const file = join(dir, "src", "connection.js");
  await writeFile(
    file,
    (await readFile(file, "utf8")).replaceAll("agentplane: write-after-close repair", ""),
  );
  return dir;
}

describe("dependency patches at start-up", () => {
  it("applies every patch to the installed dependencies, none left out", async () => {
    const warnings: string[] = [];
    const report = await applyDependencyPatches({ warn: (message: string) => warnings.push(message) });
    expect(report.applied).toEqual([
      POSTGRES_DRIVER_REPAIR,
      PG_BOSS_MANAGER_PATCH,
      CALLBACK_MANAGER_COPY_PATCH,
    ]);
    expect(report.fellBack).toEqual([]);
    expect(warnings).toEqual([]);
    expect(pgBossManagerPatched()).toBe(true);
    // Applying again changes nothing.
    expect(await applyDependencyPatches({ warn: () => {} })).toEqual(report);
  });

  it("stops the start, naming the repair and the file, when the install skipped the driver repair", async () => {
    const root = await unrepairedDriver();
    await expect(applyDependencyPatches({ warn: () => {} }, { driverRoot: root })).rejects.toThrow(
      new RegExp(`"postgres\\.js driver repair .*" is not applied .*${join(root, "src", "connection.js")}`),
    );
  });

  it("refuses to patch a pg-boss Manager that no longer has a method it wraps", () => {
    const manager = { prototype: { complete: async () => {}, fail: async () => {} } };
    expect(() => applyPgBossManagerPatch(manager as never)).toThrow(
      `dependency patch "${PG_BOSS_MANAGER_PATCH}" cannot apply: Manager.prototype.fetch is gone`,
    );
  });

  it("refuses to tag queries of a driver whose Query has no handle", () => {
    const sql = () => ({ args: [] });
    expect(() => installQueryContextTags(sql as never, () => undefined)).toThrow(
      `dependency patch "${QUERY_CONTEXT_TAGS_PATCH}" cannot apply`,
    );
  });
});
