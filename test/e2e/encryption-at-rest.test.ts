/**
 * Built-in encryption at rest (AGENTPLANE_AES_KEY, AGENTPLANE_AES_JSON_KEYS): assistants, threads,
 * runs (stream, wait, interrupt and resume), state, history, store and crons round-trip through the
 * official `@langchain/langgraph-sdk` and a Connect call, while every table of the database (pg-boss's
 * included) holds none of the plaintext. Filtering on an encrypted key answers 422; a rotated key ring
 * reads what the old key wrote; an API process and a worker process decrypt each other's data.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { Client } from "@langchain/langgraph-sdk";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENCRYPTED_PREFIX } from "../../server/store/crypto/stored-data-cipher.js";
import { databaseRows } from "../support/database-rows.js";
import { collect, sdkClient } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = fileURLToPath(new URL("./fixtures/encryption/langgraph.json", import.meta.url));
const KEY1 = randomBytes(32);
const KEY2 = randomBytes(32);
const aes = (...keys: Buffer[]) => ({ keys, jsonKeys: ["secret"] });

/** A plaintext no other test value contains, so finding it in the database proves a leak. */
const plain = (label: string) => `plain-${label}-${randomBytes(6).toString("hex")}`;

let t: TestApp;
let sdk: Client;
/** Every plaintext the test sent under the `secret` key. */
const secrets: string[] = [];
const secret = (label: string) => {
  const value = plain(label);
  secrets.push(value);
  return value;
};

/** Every row of the database as text, one per line (see databaseRows). */
async function databaseText(url: string): Promise<string> {
  return (await databaseRows(url)).join("\n\u0000");
}

/** The lines of `dump` that contain `value` (for a readable failure). */
const linesWith = (dump: string, value: string) =>
  dump.split("\n\u0000").filter((line) => line.includes(value));

/** `text` as Postgres prints it inside bytea (hex), to find plaintext in serialized blobs too. */
const hexOf = (text: string) => Buffer.from(text).toString("hex");

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: GRAPHS, aes: aes(KEY1) });
  sdk = sdkClient(t.baseUrl, t.adminKey);
});
afterAll(async () => {
  await t?.stop();
});

describe("built-in encryption at rest", () => {
  it("round-trips every kind of agent data and stores none of the plaintext", async () => {
    const assistantSecrets = { config: secret("assistant-config"), meta: secret("assistant-meta") };
    const assistant = await sdk.assistants.create({
      graphId: "vault",
      config: { configurable: { secret: assistantSecrets.config } },
      metadata: { secret: assistantSecrets.meta, team: "blue" },
    });
    const readAssistant = await sdk.assistants.get(assistant.assistant_id);
    expect(readAssistant.config.configurable).toMatchObject({ secret: assistantSecrets.config });
    expect(readAssistant.metadata).toMatchObject({ secret: assistantSecrets.meta, team: "blue" });

    const threadMeta = secret("thread-meta");
    const thread = await sdk.threads.create({ metadata: { secret: threadMeta, owner: "ann" } });
    expect((await sdk.threads.get(thread.thread_id)).metadata).toMatchObject({ secret: threadMeta });

    // A streamed run that stops on an interrupt carrying the secret.
    const inputSecret = secret("run-input");
    const runMeta = secret("run-meta");
    const parts = await collect(
      sdk.runs.stream(thread.thread_id, assistant.assistant_id, {
        input: { secret: inputSecret, note: "first" },
        metadata: { secret: runMeta },
        config: { configurable: { secret: secret("run-config") } },
        streamMode: ["values", "updates"],
      }),
    );
    expect(parts.filter((p) => p.event === "error")).toEqual([]);
    expect(parts.find((p) => p.event === "values")?.data).toMatchObject({ secret: inputSecret });
    const interrupted = await sdk.threads.get(thread.thread_id);
    expect(interrupted.status).toBe("interrupted");
    expect(JSON.stringify(interrupted.interrupts)).toContain(inputSecret);
    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.values).toMatchObject({ secret: inputSecret, note: "first" });
    expect(JSON.stringify(state.tasks)).toContain(inputSecret);

    // Resume with a secret answer, waiting for the result.
    const answer = secret("resume");
    const done = await sdk.runs.wait(thread.thread_id, assistant.assistant_id, {
      command: { resume: { secret: answer } },
    });
    expect(done).toMatchObject({ secret: inputSecret, reply: { secret: answer } });
    const runs = await sdk.runs.list(thread.thread_id);
    const first = runs.find((r) => JSON.stringify(r.metadata).includes(runMeta));
    expect(first?.metadata).toMatchObject({ secret: runMeta });
    const history = await sdk.threads.getHistory(thread.thread_id, { limit: 10 });
    expect(history.length).toBeGreaterThan(2);
    expect(history[0]?.values).toMatchObject({ reply: { secret: answer } });

    // The store: written by the graph, and by the client.
    const graphItem = await sdk.store.getItem(["vault"], "note-first");
    expect(graphItem?.value).toEqual({ secret: inputSecret, note: "first" });
    const storeSecret = secret("store");
    await sdk.store.putItem(["people", "ann"], "card", { secret: storeSecret, colour: "red" });
    expect((await sdk.store.getItem(["people", "ann"], "card"))?.value).toEqual({
      secret: storeSecret,
      colour: "red",
    });
    const found = await sdk.store.searchItems(["people"], { filter: { colour: "red" } });
    expect(found.items.map((i) => i.value)).toEqual([{ secret: storeSecret, colour: "red" }]);

    // Crons keep their payload and metadata encrypted.
    const cronSecret = secret("cron-input");
    const cronMeta = secret("cron-meta");
    const cron = await sdk.crons.create("quick", {
      schedule: "0 0 1 1 *",
      input: { secret: cronSecret, note: "cron" },
      metadata: { secret: cronMeta },
      enabled: false,
    });
    const [listed] = await sdk.crons.search({ assistantId: "quick" });
    expect(listed).toMatchObject({ cron_id: cron.cron_id, metadata: { secret: cronMeta } });
    expect(JSON.stringify(listed?.payload)).toContain(cronSecret);

    // A stateless run waited on: the temporary thread's data passes through too.
    const statelessSecret = secret("stateless");
    const quick = await sdk.runs.wait(null, "quick", { input: { secret: statelessSecret, note: "x" } });
    expect(quick).toMatchObject({ secret: statelessSecret, reply: "seen x" });

    // One Connect call reads the thread decrypted.
    const connect = await t
      .client({ protocol: "connect" })
      .agents.threads.getThread({ threadId: thread.thread_id });
    expect(connect.metadata).toMatchObject({ secret: threadMeta });
    expect(connect.values).toMatchObject({
      secret: inputSecret,
      reply: { secret: answer },
    });

    const dump = await databaseText(t.databaseUrl);
    expect(dump).toContain(ENCRYPTED_PREFIX);
    expect(dump).toContain("blue");
    for (const value of secrets) {
      expect(linesWith(dump, value), `plaintext ${value} is stored`).toEqual([]);
      expect(dump, `plaintext ${value} is stored in bytes`).not.toContain(hexOf(value));
    }
  });

  it("encrypts the documents of multipart trace ingest, which otherwise go to Postgres as sent", async () => {
    const id = randomUUID();
    const inputSecret = secret("trace-inputs");
    const outputSecret = secret("trace-outputs");
    const start = new Date();
    const dotted = `${start.toISOString().replace(/[-:]/g, "").replace(".", "").slice(0, -1)}000Z${id}`;
    const boundary = `----LangSmithFormBoundary${randomBytes(4).toString("hex")}`;
    const parts: [string, unknown][] = [
      [
        `post.${id}`,
        { id, trace_id: id, dotted_order: dotted, name: "vault", run_type: "chain", session_name: "enc" },
      ],
      [`post.${id}.inputs`, { question: { secret: inputSecret } }],
      [`post.${id}.outputs`, { secret: outputSecret, note: "kept" }],
    ];
    const body = `${parts
      .map(([name, value]) => {
        const data = JSON.stringify(value);
        return `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\nContent-Type: application/json; length=${data.length}\r\n\r\n${data}\r\n`;
      })
      .join("")}--${boundary}--\r\n`;
    const sent = await t.fetch("/api/v1/runs/multipart", {
      method: "POST",
      body,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
    });
    expect(sent.status).toBe(202);

    const dump = await databaseText(t.databaseUrl);
    expect(linesWith(dump, inputSecret)).toEqual([]);
    expect(linesWith(dump, outputSecret)).toEqual([]);
    expect(dump).toContain(ENCRYPTED_PREFIX);
    const read = await t.fetch(`/api/v1/runs/${id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({
      inputs: { question: { secret: inputSecret } },
      outputs: { secret: outputSecret, note: "kept" },
    });
  });

  it("refuses (422) a search or count that filters on an encrypted key, naming it", async () => {
    const refusals = [
      t.fetch("/threads/search", { method: "POST", body: JSON.stringify({ metadata: { secret: "x" } }) }),
      t.fetch("/threads/count", { method: "POST", body: JSON.stringify({ values: { a: { secret: "x" } } }) }),
      t.fetch("/assistants/search", { method: "POST", body: JSON.stringify({ metadata: { secret: "x" } }) }),
      t.fetch("/runs/crons/search", { method: "POST", body: JSON.stringify({ metadata: { secret: "x" } }) }),
      t.fetch("/store/items/search", {
        method: "POST",
        body: JSON.stringify({ namespace_prefix: ["people"], filter: { secret: { $eq: "x" } } }),
      }),
    ];
    for (const response of await Promise.all(refusals)) {
      expect(response.status).toBe(422);
      expect(((await response.json()) as { detail: string }).detail).toMatch(
        /"secret", whose values are encrypted at rest/,
      );
    }
    const thread = await sdk.threads.create();
    const history = await t.fetch(`/threads/${thread.thread_id}/history`, {
      method: "POST",
      body: JSON.stringify({ metadata: { secret: "x" } }),
    });
    expect(history.status).toBe(422);
    // Other keys still filter.
    expect(await sdk.threads.count({ metadata: { owner: "ann" } })).toBe(1);
  });

  it("after rotation the new key encrypts and the old one still decrypts", async () => {
    const before = secret("before-rotation");
    const old = await sdk.threads.create({ metadata: { secret: before } });
    const rotated = await startTestApp({
      graphConfigPath: GRAPHS,
      databaseUrl: t.databaseUrl,
      bootstrapApiKey: t.adminKey,
      aes: aes(KEY2, KEY1),
    });
    try {
      const rsdk = sdkClient(rotated.baseUrl, t.adminKey);
      expect((await rsdk.threads.get(old.thread_id)).metadata).toMatchObject({ secret: before });
      const after = secret("after-rotation");
      const fresh = await rsdk.threads.create({ metadata: { secret: after } });
      expect((await rsdk.threads.get(fresh.thread_id)).metadata).toMatchObject({ secret: after });

      const sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
      try {
        const [row] = await sql<{ sealed: string }[]>`
          select metadata ->> 'secret' as sealed from threads where thread_id = ${fresh.thread_id}`;
        const bytes = Buffer.from((row?.sealed ?? "").slice(ENCRYPTED_PREFIX.length), "base64");
        const fingerprint = (key: Buffer) => createHash("sha256").update(key).digest().subarray(0, 4);
        expect(bytes.subarray(1, 5)).toEqual(fingerprint(KEY2));
      } finally {
        await sql.end();
      }
      // A process that lacks the new key cannot read it, and says which key is missing.
      const response = await t.fetch(`/threads/${fresh.thread_id}`);
      expect(response.status).toBe(500);
    } finally {
      await rotated.stop();
    }
  });
});

describe("encryption across processes", () => {
  let api: TestApp;
  let worker: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ graphConfigPath: GRAPHS, role: "api", aes: aes(KEY1) });
    worker = await startTestApp({
      graphConfigPath: GRAPHS,
      role: "worker",
      databaseUrl: api.databaseUrl,
      bootstrapApiKey: api.adminKey,
      aes: aes(KEY1),
    });
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  it("a run created on the API process executes on the worker, each decrypting what the other wrote", async () => {
    const client = sdkClient(api.baseUrl, api.adminKey);
    const inputSecret = plain("processes");
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "vault", { input: { secret: inputSecret, note: "p" } });
    const answer = plain("processes-resume");
    const done = await client.runs.wait(thread.thread_id, "vault", {
      command: { resume: { secret: answer } },
    });
    expect(done).toMatchObject({ secret: inputSecret, reply: { secret: answer } });
    expect((await client.store.getItem(["vault"], "note-p"))?.value).toEqual({
      secret: inputSecret,
      note: "p",
    });
    const dump = await databaseText(api.databaseUrl);
    for (const value of [inputSecret, answer]) {
      expect(linesWith(dump, value)).toEqual([]);
      expect(dump).not.toContain(hexOf(value));
    }
  });
});
