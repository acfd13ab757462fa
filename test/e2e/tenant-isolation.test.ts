/**
 * The tenant-isolation table: a key of workspace B can neither read nor change workspace A's
 * resources, through REST and through Connect. Every service adds a suite of its RPCs as
 * `isolation/<service>.cases.ts`; this file runs them all.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectError } from "../../sdk/index.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import type { IsolationContext, IsolationSuite } from "./isolation/isolation-suite.js";

const suites = Object.values(
  import.meta.glob<{ suite: IsolationSuite }>("./isolation/*.cases.ts", { eager: true }),
).map((m) => m.suite);

let t: TestApp;
let ctx: IsolationContext;
let keyB: string;
const fixtures = new Map<string, unknown>();

beforeAll(async () => {
  t = await startTestApp();
  const admin = t.client();
  const workspaceA = (await admin.workspaces.getCurrentWorkspace({})).id;
  const workspaceB = (await admin.workspaces.createWorkspace({ displayName: "B" })).id;
  // As strong as a key confined to B can be: workspace admin there, organization operator.
  keyB = (
    await admin.apiKeys.createApiKey({
      kind: "service",
      workspaceIds: [workspaceB],
      role: "admin",
      organizationRole: "operator",
    })
  ).key;
  ctx = { t, workspaceA, workspaceB, adminA: t.client({ tenantId: workspaceA }) };
  for (const suite of suites) fixtures.set(suite.service, await suite.setup(ctx));
});
afterAll(() => t?.stop());

it("finds the suites", () => {
  expect(suites.map((s) => s.service)).toContain("iam");
});

for (const suite of suites) {
  describe(`${suite.service}: a key of workspace B cannot reach workspace A`, () => {
    for (const c of suite.cases) {
      it(`${c.name} over REST`, async () => {
        const { method, path, body, tenantId } = c.rest(fixtures.get(suite.service));
        const res = await t.fetch(path, {
          method,
          apiKey: keyB,
          ...(tenantId ? { tenantId } : {}),
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        expect(res.status).toBe(c.status);
        expect(typeof ((await res.json()) as { detail: unknown }).detail).toBe("string");
      });

      it(`${c.name} over Connect`, async () => {
        const f = fixtures.get(suite.service);
        const tenantId = c.rest(f).tenantId;
        const client = t.client({ apiKey: keyB, ...(tenantId ? { tenantId } : {}) });
        const error = await c.connect(client, f).then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
        expect(error?.code).toBe(c.code);
      });
    }

    it("leaves workspace A's resources unchanged", async () => {
      await suite.verify?.(ctx, fixtures.get(suite.service));
    });
  });
}
