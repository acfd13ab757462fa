/**
 * Custom encryption at rest (`encryption.path` of the graphs file) beside custom auth (`auth.path`):
 * two JWT users of the official `@langchain/langgraph-sdk` run, read state and history, use the store
 * and crons, all round-tripping, while a full data dump of the database holds none of the plaintext
 * and every sealed value carries its writer's context. A handler that breaks the key set fails the
 * write whole; a run created on an API process executes on a worker process in its creator's context;
 * custom and built-in encryption together are refused at start-up.
 */
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signHs256 } from "../../examples/custom-auth/hs256-jwt.js";
import { CUSTOM_SEALED_PREFIX } from "../../server/store/crypto/custom-data-cipher.js";
import { databaseRows } from "../support/database-rows.js";
import { collect } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = fileURLToPath(new URL("./fixtures/custom-encryption/langgraph.json", import.meta.url));
/** The fixture graphs file's JWT_SECRET. */
const JWT_SECRET = "custom-encryption-test-secret-0123456789";

const sdkAs = (baseUrl: string, sub: string) =>
  new Client({
    apiUrl: baseUrl,
    apiKey: null,
    defaultHeaders: {
      Authorization: `Bearer ${signHs256({ sub, exp: Math.floor(Date.now() / 1000) + 3600 }, JWT_SECRET)}`,
    },
    callerOptions: { maxRetries: 0 },
  });

/** Every plaintext the tests sent; finding one in the database proves a leak. */
const secrets: string[] = [];
const secret = (label: string) => {
  const value = `plain-${label}-${randomBytes(6).toString("hex")}`;
  secrets.push(value);
  return value;
};

/** Every row of the database as text, one per line (see databaseRows). */
async function dumpData(url: string): Promise<string> {
  return (await databaseRows(url)).join("\n");
}

/** The contexts stored with the sealed values in `text` (any JSON or dump text). */
function sealedContexts(text: string): unknown[] {
  const pattern = new RegExp(`${CUSTOM_SEALED_PREFIX.replace("$", "\\$")}([A-Za-z0-9+/=]+)`, "g");
  return [...text.matchAll(pattern)].map(
    (m) => (JSON.parse(Buffer.from(m[1] ?? "", "base64").toString()) as { c: unknown }).c,
  );
}

/** A user's whole tour: runs (stream, interrupt, resume), state, history, store, crons, stateless. */
async function tour(sdk: Client, user: string) {
  const topic = secret(`${user}-thread-meta`);
  const thread = await sdk.threads.create({ metadata: { topic } });
  expect(thread.metadata).toMatchObject({ topic, owner: user });
  expect((await sdk.threads.get(thread.thread_id)).metadata).toMatchObject({ topic, owner: user });

  const input = secret(`${user}-input`);
  const parts = await collect(
    sdk.runs.stream(thread.thread_id, "vault", {
      input: { secret: input, note: user },
      metadata: { label: secret(`${user}-run-meta`) },
      streamMode: ["values", "updates"],
    }),
  );
  expect(parts.filter((p) => p.event === "error")).toEqual([]);
  expect(parts.find((p) => p.event === "values")?.data).toMatchObject({ secret: input });
  const state = await sdk.threads.getState(thread.thread_id);
  expect(state.values).toMatchObject({ secret: input, note: user });
  expect(JSON.stringify(state.tasks)).toContain(input);

  const answer = secret(`${user}-resume`);
  const done = await sdk.runs.wait(thread.thread_id, "vault", { command: { resume: { secret: answer } } });
  expect(done).toMatchObject({ secret: input, reply: { secret: answer } });
  const history = await sdk.threads.getHistory(thread.thread_id, { limit: 10 });
  expect(history.length).toBeGreaterThan(2);
  expect(history[0]?.values).toMatchObject({ reply: { secret: answer } });
  const runs = await sdk.runs.list(thread.thread_id);
  expect(runs).toHaveLength(2);

  const card = secret(`${user}-store`);
  await sdk.store.putItem(["cards"], "card", { secret: card, colour: "red" });
  expect((await sdk.store.getItem(["cards"], "card"))?.value).toEqual({ secret: card, colour: "red" });
  const found = await sdk.store.searchItems(["cards"]);
  expect(found.items.map((i) => i.value)).toEqual([{ secret: card, colour: "red" }]);

  const cronInput = secret(`${user}-cron`);
  const cron = await sdk.crons.create("quick", {
    schedule: "0 0 1 1 *",
    input: { secret: cronInput, note: "cron" },
    enabled: false,
  });
  const [listed] = await sdk.crons.search({ assistantId: "quick" });
  expect(listed?.cron_id).toBe(cron.cron_id);
  expect(JSON.stringify(listed?.payload)).toContain(cronInput);

  const quick = await sdk.runs.wait(null, "quick", {
    input: { secret: secret(`${user}-stateless`), note: "q" },
  });
  expect(quick).toMatchObject({ reply: "seen q" });
  return { threadId: thread.thread_id, cronId: cron.cron_id };
}

describe("custom encryption at rest with custom auth", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ graphConfigPath: GRAPHS });
  }, 120_000);
  afterAll(async () => {
    await t?.stop();
  });

  it("round-trips both users' data, stores none of it in the clear, each value under its writer's context", async () => {
    const alice = sdkAs(t.baseUrl, "alice");
    const bob = sdkAs(t.baseUrl, "bob");
    const [a, b] = await Promise.all([tour(alice, "alice"), tour(bob, "bob")]);
    // Each still sees only their own (custom auth unchanged by encryption).
    expect((await alice.threads.search({ limit: 100 })).map((x) => x.thread_id)).toContain(a.threadId);
    expect((await alice.threads.search({ limit: 100 })).map((x) => x.thread_id)).not.toContain(b.threadId);

    const dump = await dumpData(t.databaseUrl);
    expect(dump).toContain(CUSTOM_SEALED_PREFIX);
    for (const value of secrets) {
      expect(
        dump.split("\n").filter((line) => line.includes(value)),
        `plaintext ${value} is stored`,
      ).toEqual([]);
      expect(dump.includes(Buffer.from(value).toString("hex")), `plaintext ${value} is stored in bytes`).toBe(
        false,
      );
    }

    const sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const threads = await sql<{ thread_id: string; values: string; metadata: string }[]>`
        select thread_id, values::text, metadata::text from threads where thread_id in ${sql([a.threadId, b.threadId])}`;
      for (const row of threads) {
        const tenant = row.thread_id === a.threadId ? "alice" : "bob";
        const contexts = sealedContexts(row.values + row.metadata);
        expect(contexts.length).toBeGreaterThan(1);
        expect(new Set(contexts.map((c) => JSON.stringify(c)))).toEqual(
          new Set([JSON.stringify({ tenant_id: tenant })]),
        );
        // Values the handler leaves alone stay filterable.
        expect(JSON.parse(row.metadata)).toMatchObject({ owner: tenant });
      }
      const runs = await sql<{ thread_id: string; encryption_context: string }[]>`
        select thread_id, encryption_context from agent_runs where thread_id in ${sql([a.threadId, b.threadId])}`;
      expect(runs).toHaveLength(4);
      for (const run of runs)
        expect(JSON.parse(run.encryption_context)).toEqual({
          tenant_id: run.thread_id === a.threadId ? "alice" : "bob",
        });
      const blobs = await sql<{ type: string; blob: Buffer }[]>`
        select type, blob from checkpoint_blobs where thread_id = ${a.threadId} and blob is not null`;
      expect(blobs.length).toBeGreaterThan(0);
      for (const blob of blobs) {
        expect(blob.type.startsWith("cenc:")).toBe(true);
        const header = blob.blob.subarray(4, 4 + blob.blob.readUInt32BE(0)).toString();
        expect(JSON.parse(header)).toEqual({ tenant_id: "alice" });
      }
      const [cron] = await sql<{ encryption_context: string }[]>`
        select encryption_context from agent_crons where cron_id = ${a.cronId}`;
      expect(JSON.parse(cron?.encryption_context ?? "null")).toEqual({ tenant_id: "alice" });
    } finally {
      await sql.end();
    }
  }, 120_000);

  it("fails a write whole, with a clear error, when encrypt.json changes the key set", async () => {
    const alice = sdkAs(t.baseUrl, "alice");
    const before = await alice.threads.count();
    const response = await fetch(`${t.baseUrl}/threads`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${signHs256({ sub: "alice", exp: Math.floor(Date.now() / 1000) + 3600 }, JWT_SECRET)}`,
      },
      body: JSON.stringify({ metadata: { drop_me: "x", topic: "broken" } }),
    });
    expect(response.status).toBe(500);
    expect(((await response.json()) as { detail: string }).detail).toMatch(
      /encryption\.path .*the encrypt\.json handler must keep the key set unchanged/,
    );
    expect(await alice.threads.count()).toBe(before);
    const sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql<
        { n: number }[]
      >`select count(*)::int as n from threads where metadata ? 'drop_me'`;
      expect(row?.n).toBe(0);
    } finally {
      await sql.end();
    }
  });

  it("refuses custom and built-in encryption together at start-up, naming both", async () => {
    await expect(
      startTestApp({ graphConfigPath: GRAPHS, aes: { keys: [randomBytes(32)], jsonKeys: ["secret"] } }),
    ).rejects.toThrow(/encryption\.path .* and AGENTPLANE_AES_KEY are both set/);
  });
});

describe("custom encryption across processes", () => {
  let api: TestApp;
  let worker: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ graphConfigPath: GRAPHS, role: "api" });
    worker = await startTestApp({
      graphConfigPath: GRAPHS,
      role: "worker",
      databaseUrl: api.databaseUrl,
      bootstrapApiKey: api.adminKey,
    });
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  it("a run created on the API process executes on the worker in its creator's context", async () => {
    const carol = sdkAs(api.baseUrl, "carol");
    const input = secret("processes");
    const thread = await carol.threads.create();
    await carol.runs.wait(thread.thread_id, "vault", { input: { secret: input, note: "p" } });
    const answer = secret("processes-resume");
    const done = await carol.runs.wait(thread.thread_id, "vault", {
      command: { resume: { secret: answer } },
    });
    expect(done).toMatchObject({ secret: input, reply: { secret: answer } });

    const sql = postgres(api.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      // Checkpoints are written by the worker only: their blobs carry carol's context.
      const blobs = await sql<{ blob: Buffer }[]>`
        select blob from checkpoint_blobs where thread_id = ${thread.thread_id} and blob is not null`;
      expect(blobs.length).toBeGreaterThan(0);
      for (const { blob } of blobs)
        expect(JSON.parse(blob.subarray(4, 4 + blob.readUInt32BE(0)).toString())).toEqual({
          tenant_id: "carol",
        });
      const [row] = await sql<{ values: string }[]>`
        select values::text from threads where thread_id = ${thread.thread_id}`;
      expect(sealedContexts(row?.values ?? "")).toContainEqual({ tenant_id: "carol" });
    } finally {
      await sql.end();
    }
    const dump = await dumpData(api.databaseUrl);
    for (const value of [input, answer]) expect(dump.includes(value)).toBe(false);
  });
});
