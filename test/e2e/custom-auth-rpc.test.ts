/**
 * Custom auth over gRPC and Connect, resource by resource: two JWT users of the custom-auth
 * fixture, each over both protocols, see and change only their own threads (search, count, get,
 * copy, delete), runs (get, list, join stream, delete), crons (search, count, get, update, delete)
 * and store items (get, search, list namespaces, delete). The REST side is test/e2e/custom-auth.test.ts.
 */
import { fileURLToPath } from "node:url";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import {
  type Client,
  createClient as createRpcClient,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signHs256 } from "../../examples/custom-auth/hs256-jwt.js";
import { CronService } from "../../gen/agentplane/agents/v1/cron_service_pb.js";
import { RunService } from "../../gen/agentplane/agents/v1/run_service_pb.js";
import { StoreService } from "../../gen/agentplane/agents/v1/store_service_pb.js";
import { ThreadService } from "../../gen/agentplane/agents/v1/thread_service_pb.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const GRAPHS = fileURLToPath(new URL("./fixtures/custom-auth/agentplane.json", import.meta.url));
const SECRET = "custom-auth-test-secret-0123456789abcdef";
const token = (sub: string) => signHs256({ sub, exp: Math.floor(Date.now() / 1000) + 3600 }, SECRET);
const NOT_FOUND = { code: 5 };
/** Code.FailedPrecondition: a custom auth user's copy of a thread not theirs (409 over REST). */
const NOT_COPYABLE = { code: 9 };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: GRAPHS });
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

/** The four services for a JWT user over one protocol. */
interface UserClients {
  threads: Client<typeof ThreadService>;
  runs: Client<typeof RunService>;
  crons: Client<typeof CronService>;
  store: Client<typeof StoreService>;
}

const PROTOCOLS: [string, (options: { baseUrl: string; interceptors: Interceptor[] }) => Transport][] = [
  ["Connect", (options) => createConnectTransport({ ...options, httpVersion: "1.1" })],
  ["gRPC", (options) => createGrpcTransport(options)],
];

describe.each(PROTOCOLS)("custom auth users over %s", (protocol, transportOf) => {
  const as = (sub: string): UserClients => {
    const transport = transportOf({
      baseUrl: t.baseUrl,
      interceptors: [
        (next) => async (req) => {
          req.header.set("authorization", `Bearer ${token(sub)}`);
          return next(req);
        },
      ],
    });
    return {
      threads: createRpcClient(ThreadService, transport),
      runs: createRpcClient(RunService, transport),
      crons: createRpcClient(CronService, transport),
      store: createRpcClient(StoreService, transport),
    };
  };
  // Users of their own per protocol, so each protocol's counts start at zero.
  const owner = `${protocol}-owner`;
  const other = `${protocol}-other`;

  it("keeps threads and their runs to their owner: search, count, get, copy, join stream, delete", async () => {
    const mine = as(owner);
    const theirs = as(other);
    const thread = await mine.threads.createThread({});
    expect(thread.metadata).toMatchObject({ owner });
    const threadId = thread.threadId;
    await mine.runs.waitRun({
      threadId,
      assistantId: "agent",
      input: fromJson(ValueSchema, { messages: [{ role: "user", content: "hi" }] }),
    });
    const [run] = (await mine.runs.listRuns({ threadId })).runs;
    const runId = run?.runId as string;
    expect(run?.metadata).toMatchObject({ owner });

    expect((await theirs.threads.searchThreads({})).threads).toEqual([]);
    expect((await theirs.threads.countThreads({})).count).toBe(0);
    await expect(theirs.threads.getThread({ threadId })).rejects.toMatchObject(NOT_FOUND);
    // As the LangGraph JS server answers it: a conflict, for another's thread and a missing one alike.
    await expect(theirs.threads.copyThread({ threadId })).rejects.toMatchObject(NOT_COPYABLE);
    await expect(theirs.threads.deleteThread({ threadId })).rejects.toMatchObject(NOT_FOUND);
    await expect(theirs.runs.getRun({ threadId, runId })).rejects.toMatchObject(NOT_FOUND);
    await expect(theirs.runs.listRuns({ threadId })).rejects.toMatchObject(NOT_FOUND);
    await expect(theirs.runs.deleteRun({ threadId, runId })).rejects.toMatchObject(NOT_FOUND);
    const refusedStream = async () => {
      for await (const _ of theirs.runs.joinRunStream({ threadId, runId })) break;
    };
    await expect(refusedStream()).rejects.toMatchObject(NOT_FOUND);

    // The owner joins the (ended) run's stream: it closes cleanly.
    const events: string[] = [];
    for await (const message of mine.runs.joinRunStream({ threadId, runId })) events.push(message.event);
    expect(events.every((e) => e !== "error")).toBe(true);
    const copy = await mine.threads.copyThread({ threadId });
    expect(copy.metadata).toMatchObject({ owner });
    expect((await mine.threads.countThreads({})).count).toBe(2);
    await mine.runs.deleteRun({ threadId, runId });
    await expect(mine.runs.getRun({ threadId, runId })).rejects.toMatchObject(NOT_FOUND);
    await mine.threads.deleteThread({ threadId: copy.threadId });
    expect((await mine.threads.searchThreads({})).threads.map((x) => x.threadId)).toEqual([threadId]);
  });

  it("keeps crons to their owner: search, count, get, update, delete", async () => {
    const mine = as(owner);
    const theirs = as(other);
    const cron = await mine.crons.createCron({ assistantId: "agent", schedule: "0 0 1 1 *" });
    const cronId = cron.cronId;
    expect(cron.metadata).toMatchObject({ owner });
    expect((await theirs.crons.searchCrons({})).crons).toEqual([]);
    expect((await theirs.crons.countCrons({})).count).toBe(0);
    await expect(theirs.crons.getCron({ cronId })).rejects.toMatchObject(NOT_FOUND);
    await expect(theirs.crons.updateCron({ cronId, schedule: "0 0 2 1 *" })).rejects.toMatchObject(NOT_FOUND);
    await expect(theirs.crons.deleteCron({ cronId })).rejects.toMatchObject(NOT_FOUND);

    expect((await mine.crons.searchCrons({})).crons.map((c) => c.cronId)).toEqual([cronId]);
    expect((await mine.crons.countCrons({})).count).toBe(1);
    expect((await mine.crons.getCron({ cronId })).cronId).toBe(cronId);
    expect((await mine.crons.updateCron({ cronId, schedule: "0 0 2 1 *" })).schedule).toBe("0 0 2 1 *");
    await mine.crons.deleteCron({ cronId });
    expect((await mine.crons.countCrons({})).count).toBe(0);
  });

  it("keeps store items under their owner's namespace: get, search, list namespaces, delete", async () => {
    const mine = as(owner);
    const theirs = as(other);
    await mine.store.putItem({ namespace: ["docs"], key: "k", value: { text: "mine" } });
    await theirs.store.putItem({ namespace: ["docs"], key: "k", value: { text: "theirs" } });
    expect((await mine.store.getItem({ namespace: ["docs"], key: "k" })).item?.value).toEqual({
      text: "mine",
    });
    expect((await theirs.store.getItem({ namespace: ["docs"], key: "k" })).item?.value).toEqual({
      text: "theirs",
    });
    const found = await mine.store.searchItems({ namespacePrefix: ["docs"] });
    expect(found.items.map((i) => i.value)).toEqual([{ text: "mine" }]);
    // The handler puts the user in front of every namespace: each lists only their own.
    const listed = await mine.store.listNamespaces({});
    expect(listed.namespaces.map((ns) => ns.values.map((v) => v.kind.value))).toEqual([[owner, "docs"]]);
    await theirs.store.deleteItem({ namespace: ["docs"], key: "k" });
    expect((await mine.store.getItem({ namespace: ["docs"], key: "k" })).item?.value).toEqual({
      text: "mine",
    });
    expect((await theirs.store.getItem({ namespace: ["docs"], key: "k" })).item).toBeUndefined();
  });

  it("answers a caller without a token Unauthenticated, with the handler's header", async () => {
    const anonymous = createRpcClient(ThreadService, transportOf({ baseUrl: t.baseUrl, interceptors: [] }));
    const error = await anonymous.countThreads({}).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 16 });
    const { metadata } = error as { metadata: Headers };
    expect(metadata.get("www-authenticate")).toBe('Bearer realm="agentplane-test"');
  });
});
