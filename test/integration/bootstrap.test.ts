import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../server/logger.js";
import { hashApiKey } from "../../server/services/iam/api-key-secret.js";
import { ADMIN_KEY_FILE, bootstrapIam } from "../../server/services/iam/bootstrap.js";
import { findUsableKeyByHash } from "../../server/store/iam/api-key-store.js";
import { createTestDatabase } from "../support/database.js";

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dataDir: string;
const log = createLogger("error");

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-bootstrap-"));
});
afterAll(async () => {
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("bootstrapIam", () => {
  it("creates the organization once, prints a generated key once and saves it 0600", async () => {
    const config = {
      plan: "plus" as const,
      adminEmail: "root@example.com",
      bootstrapApiKey: undefined,
      dataDir,
    };
    const printed: string[] = [];
    const first = await bootstrapIam(db.sql, config, log, (line) => printed.push(line));
    expect(first.createdOrganization).toBe(true);
    const key = first.generatedAdminKey!;
    expect(key).toMatch(/^ap_pt_/);
    expect(printed.join("\n")).toContain(key);
    const file = join(dataDir, ADMIN_KEY_FILE);
    expect((await readFile(file, "utf8")).trim()).toBe(key);
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const found = await findUsableKeyByHash(db.sql, hashApiKey(key));
    expect(found?.organization.plan).toBe("plus");
    expect(found?.user?.email).toBe("root@example.com");
    expect(found?.user?.organizationRole).toBe("admin");

    const again: string[] = [];
    const second = await bootstrapIam(db.sql, config, log, (line) => again.push(line));
    expect(second).toEqual({ createdOrganization: false, generatedAdminKey: undefined });
    expect(again).toEqual([]);
    const orgs = await db.sql`select count(*)::int as n from organizations`;
    expect(orgs[0]!.n).toBe(1);
  });

  it("adds a pre-seeded AGENTPLANE_API_KEY to an existing organization without printing it", async () => {
    const preseeded = "ap_pt_preseeded_key_for_tests_0123";
    const printed: string[] = [];
    const result = await bootstrapIam(
      db.sql,
      { plan: "enterprise", adminEmail: "root@example.com", bootstrapApiKey: preseeded, dataDir },
      log,
      (line) => printed.push(line),
    );
    expect(result.createdOrganization).toBe(false);
    expect(printed).toEqual([]);
    expect((await findUsableKeyByHash(db.sql, hashApiKey(preseeded)))?.kind).toBe("personal");
  });

  it("bootstraps exactly once when processes start together", async () => {
    const other = await createTestDatabase();
    try {
      const config = {
        plan: "enterprise" as const,
        adminEmail: "a@example.com",
        bootstrapApiKey: "ap_pt_concurrent_start_key_01234",
        dataDir,
      };
      const results = await Promise.all([1, 2, 3].map(() => bootstrapIam(other.sql, config, log, () => {})));
      expect(results.filter((r) => r.createdOrganization)).toHaveLength(1);
      const orgs = await other.sql`select count(*)::int as n from organizations`;
      expect(orgs[0]!.n).toBe(1);
    } finally {
      await other.drop();
    }
  });
});
