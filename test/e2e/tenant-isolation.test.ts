/**
 * The tenant-isolation table: a key of workspace B can neither read nor change workspace A's
 * resources, through REST and through Connect. Every service adds a suite of its RPCs as
 * `isolation/<service>.cases.ts`; this file runs them all. A refused case expects its status and
 * code; an answered case (searches, counts, lists, queries) expects an answer holding none of A's
 * secrets, and sends the same call as A's admin to prove it would have found them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentplaneClient, ConnectError } from "../../sdk/index.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import type {
  AnsweredCase,
  IsolationCase,
  IsolationContext,
  IsolationSuite,
  RestCall,
} from "./isolation/isolation-suite.js";

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
  const workspaceA = (await admin.iam.workspaces.getCurrentWorkspace({})).id;
  const workspaceB = (await admin.iam.workspaces.createWorkspace({ displayName: "B" })).id;
  // As strong as a key confined to B can be: workspace admin there, organization operator.
  keyB = (
    await admin.iam.apiKeys.createApiKey({
      kind: "service",
      workspaceIds: [workspaceB],
      role: "admin",
      organizationRole: "operator",
    })
  ).key;
  ctx = {
    t,
    workspaceA,
    workspaceB,
    adminA: t.client({ tenantId: workspaceA }),
    adminB: t.client({ tenantId: workspaceB }),
  };
  for (const suite of suites) fixtures.set(suite.service, await suite.setup(ctx));
});
afterAll(() => t?.stop());

it("finds the suites", () => {
  expect(suites.map((s) => s.service)).toContain("iam");
});

/** A REST call as B (or, for the control, as A's admin in A): status, body text and headers. */
async function sendRest(call: RestCall, as: "B" | "A") {
  const res = await t.fetch(call.path, {
    method: call.method,
    ...(as === "B"
      ? { apiKey: keyB, ...(call.tenantId ? { tenantId: call.tenantId } : {}) }
      : { tenantId: ctx.workspaceA }),
    ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
  });
  const headers: string[] = [];
  res.headers.forEach((value, name) => {
    headers.push(`${name}: ${value}`);
  });
  return { status: res.status, text: await res.text(), headers: headers.join("\n") };
}

/** JSON of a Connect answer, bigints as decimal text: what is searched for secrets. */
function textOf(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) ?? "";
}

/** The secrets of A found in `text`. */
function leaked(text: string, secrets: readonly string[]): string[] {
  return secrets.filter((s) => text.includes(s));
}

/** Runs the control of an answered case on A's answer. */
function control(c: AnsweredCase<unknown>, f: unknown, answer: unknown, text: string, secrets: string[]) {
  if (typeof c.expectA === "function") c.expectA(answer, f);
  else expect(leaked(text, secrets), "A's own answer holds A's data").not.toEqual([]);
}

function restCase(suite: IsolationSuite, c: IsolationCase<unknown>) {
  return async () => {
    const f = fixtures.get(suite.service);
    const call = c.rest(f);
    const asB = await sendRest(call, "B");
    if (c.kind === "refused") {
      expect(asB.status).toBe(c.status);
      expect(typeof (JSON.parse(asB.text) as { detail: unknown }).detail).toBe("string");
      return;
    }
    const secrets = suite.secrets?.(f) ?? [];
    expect(secrets.length, `suite ${suite.service} declares the secrets of A`).toBeGreaterThan(0);
    expect(asB.status, asB.text).toBe(200);
    expect(leaked(`${asB.headers}\n${asB.text}`, secrets), "secrets of A in B's answer").toEqual([]);
    c.expectB?.(JSON.parse(asB.text), f);
    if (c.expectA === false) return;
    const asA = await sendRest(call, "A");
    expect(asA.status, asA.text).toBe(200);
    control(c, f, JSON.parse(asA.text), asA.text, secrets);
  };
}

function connectCase(suite: IsolationSuite, c: IsolationCase<unknown>) {
  return async () => {
    const f = fixtures.get(suite.service);
    const tenantId = c.rest(f).tenantId;
    const clientB: AgentplaneClient = t.client({ apiKey: keyB, ...(tenantId ? { tenantId } : {}) });
    if (c.kind === "refused") {
      const error = await c.connect(clientB, f).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(c.code);
      return;
    }
    const secrets = suite.secrets?.(f) ?? [];
    const asB = await c.connect(clientB, f);
    expect(leaked(textOf(asB), secrets), "secrets of A in B's answer").toEqual([]);
    c.expectB?.(asB, f);
    if (c.expectA === false) return;
    const asA = await c.connect(ctx.adminA, f);
    control(c, f, asA, textOf(asA), secrets);
  };
}

for (const suite of suites) {
  describe(`${suite.service}: a key of workspace B cannot reach workspace A`, () => {
    for (const c of suite.cases) {
      it(`${c.name} over REST`, restCase(suite, c));
      it(`${c.name} over Connect`, connectCase(suite, c));
    }

    it("leaves workspace A's resources unchanged", async () => {
      await suite.verify?.(ctx, fixtures.get(suite.service));
    });
  });
}
