/**
 * The SDK's clients against a real server, over each of its protocols: one client for every
 * service the server reflects, plain JSON wherever the protos hold JSON (checked against what the
 * REST API answers for the same resources), the server's error messages, decoded event streams
 * (checked against the SSE stream the official LangGraph SDK reads), and streams resumed through a
 * proxy that really drops their TCP connections. The packed SDK in Node and Chromium is
 * sdk-package.test.ts.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";
import type { DescService } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentplaneClient,
  type ClientProtocol,
  Code,
  ConnectError,
  createClient,
  type ReconnectInfo,
  type StreamEvent,
  services,
} from "../../sdk/index.js";
import { uuidv7 } from "../../server/ids.js";
import { connectFailure } from "../support/call-failures.js";
import { type DroppingProxy, startDroppingProxy } from "../support/dropping-proxy.js";
import { type RunsApp, startRunsApp } from "../support/runs-app.js";

const run = promisify(execFile);
const BUF = "node_modules/.bin/buf";
const PROTOCOLS: ClientProtocol[] = ["connect", "connect-binary", "grpc-web"];
/** Quick reconnects: the proxy's drops are instant, and the test waits for every attempt. */
const RECONNECT = { initialDelayMs: 20, maxDelayMs: 100 } as const;

let app: RunsApp;
let proxy: DroppingProxy;

beforeAll(async () => {
  app = await startRunsApp();
  proxy = await startDroppingProxy(app.t.baseUrl);
});
afterAll(async () => {
  await proxy?.close();
  await app?.t.stop();
});

const client = (protocol: ClientProtocol = "connect"): AgentplaneClient =>
  createClient({ baseUrl: app.t.baseUrl, apiKey: app.t.adminKey, protocol });

/** A REST call's status and JSON body. */
async function rest(path: string, init: { method?: string; body?: unknown } = {}) {
  const res = await app.t.fetch(path, {
    method: init.method ?? "GET",
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Every item of a stream, in order. */
async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

/** The run id a run stream's first event, `metadata`, names. */
function runIdOf(events: readonly StreamEvent[]): string {
  const data = events[0]?.data as { run_id?: string } | undefined;
  if (typeof data?.run_id !== "string") throw new Error("the stream did not start with the run's metadata");
  return data.run_id;
}

/** A ticker run's input: `ticks` custom events `interval_ms` apart. */
const ticker = (ticks: number, intervalMs: number) => ({ ticks, interval_ms: intervalMs });

describe("the service table", () => {
  it("has a client for every service the server reflects but gRPC's health and reflection", async () => {
    const { stdout } = await run(BUF, ["curl", "--list-services", app.t.baseUrl], { timeout: 20_000 });
    const reflected = stdout
      .trim()
      .split("\n")
      .filter((name) => !name.startsWith("grpc."));
    const inTable = Object.values(services).flatMap((domain) => Object.values(domain).map((s) => s.typeName));
    expect(inTable.sort()).toEqual(reflected.sort());
    expect(reflected.length).toBeGreaterThanOrEqual(19);
  });

  it("names the three run services by domain", () => {
    expect(services.agents.runs.typeName).toBe("agentplane.agents.v1.RunService");
    expect(services.tracing.runs.typeName).toBe("agentplane.tracing.v1.RunService");
    expect(services.tracingV2.runs.typeName).toBe("agentplane.tracing.v2.RunService");
    const ap = client();
    for (const [domain, table] of Object.entries(services))
      for (const [name, service] of Object.entries(table)) {
        const methods = (ap as unknown as Record<string, Record<string, Record<string, unknown>>>)[domain]![
          name
        ]!;
        expect(Object.keys(methods).sort(), `${domain}.${name}`).toEqual(
          (service as DescService).methods.map((m) => m.localName).sort(),
        );
      }
  });

  it("lists in sdk/README.md only clients the table has, with their services", async () => {
    const readme = await readFile(new URL("../../sdk/README.md", import.meta.url), "utf8");
    const rows = [...readme.matchAll(/^\| `ap\.(\w+)\.(\w+)` +\| `([\w.]+)` +\|$/gm)];
    expect(rows.length).toBeGreaterThan(0);
    const table = services as unknown as Record<string, Record<string, DescService>>;
    for (const [, domain, name, typeName] of rows)
      expect(table[domain!]?.[name!]?.typeName, `ap.${domain}.${name}`).toBe(typeName);
  });
});

describe.each(PROTOCOLS)("plain JSON over %s", (protocol) => {
  it("creates a cron from plain input and answers its Value fields as plain values, as REST does", async () => {
    const ap = client(protocol);
    const cron = await ap.agents.crons.createCron({
      assistantId: "steps",
      schedule: "0 6 * * 1",
      input: { messages: [], topic: "plain" },
      metadata: { owner: "sdk", skipped: undefined },
      timezone: "Europe/Paris",
      endTime: null,
      multitaskStrategy: "enqueue",
      streamMode: ["values", "updates"],
    });
    const same = await rest(`/runs/crons/${cron.cronId}`);
    expect(same.status).toBe(200);
    expect(cron.timezone).toBe("Europe/Paris");
    expect(cron.onRunCompleted).toBe("delete");
    expect(cron.threadId).toBeNull();
    expect(cron.endTime).toBeNull();
    expect(cron.nextRunDate).toBe(same.body.next_run_date);
    expect(cron.userId).toBe(same.body.user_id);
    expect(cron.metadata).toEqual({ owner: "sdk" });
    expect(cron.payload).toEqual(same.body.payload);
    expect(cron.payload).toMatchObject({
      input: { messages: [], topic: "plain" },
      stream_mode: ["values", "updates"],
    });
    await ap.agents.crons.deleteCron({ cronId: cron.cronId ?? "" });
  });

  it("passes run input and context as JSON would, and answers the output and state as plain values", async () => {
    const ap = client(protocol);
    const thread = await ap.agents.threads.createThread({ metadata: { via: protocol } });
    const context = {
      user: "ann",
      tags: ["a", null, 3.5],
      at: new Date(0),
      gone: undefined,
      deep: { list: [[]] },
    };
    const { output } = await ap.agents.runs.waitRun({
      threadId: thread.threadId ?? "",
      assistantId: "echo",
      input: {},
      context,
    });
    const expected = {
      user: "ann",
      tags: ["a", null, 3.5],
      at: "1970-01-01T00:00:00.000Z",
      deep: { list: [[]] },
    };
    expect(output).toMatchObject({ context: expected });
    const state = await ap.agents.threads.getThreadState({ threadId: thread.threadId ?? "" });
    const restState = await rest(`/threads/${thread.threadId}/state`);
    expect(state.values).toEqual(restState.body.values);
    expect(state.values).toMatchObject({ context: expected });
    expect(state.createdAt).toBe(restState.body.created_at);
    expect(state.checkpoint).toEqual(restState.body.checkpoint);
    const got = await ap.agents.threads.getThread({ threadId: thread.threadId ?? "" });
    expect(got.values).toEqual(restState.body.values);
  });

  it("names a store namespace one way, as labels, in every store RPC", async () => {
    const ap = client(protocol);
    const namespace = ["sdk", protocol, "notes"];
    await ap.agents.store.putItem({ namespace, key: "k", value: { text: "hi", when: new Date(0) } });
    const { item } = await ap.agents.store.getItem({ namespace, key: "k" });
    expect(item?.namespace).toEqual(namespace);
    expect(item?.value).toEqual({ text: "hi", when: "1970-01-01T00:00:00.000Z" });
    const { items } = await ap.agents.store.searchItems({ namespacePrefix: namespace });
    expect(items.map((i) => i.key)).toEqual(["k"]);
    const { namespaces } = await ap.agents.store.listNamespaces({ prefix: ["sdk", protocol] });
    expect(namespaces).toEqual([namespace]);
    await ap.agents.store.deleteItem({ namespace, key: "k" });
    expect((await ap.agents.store.getItem({ namespace, key: "k" })).item).toBeUndefined();
  });

  it("answers a trace run's list fields as plain arrays, on v1 and v2", async () => {
    const ap = client(protocol);
    const id = uuidv7();
    const ingest = await app.t.fetch("/api/v1/runs", {
      method: "POST",
      body: JSON.stringify({
        id,
        trace_id: id,
        dotted_order: `20260302T120000000000Z${id}`,
        name: "plain-json",
        run_type: "chain",
        start_time: "2026-03-02T12:00:00.000000Z",
        end_time: "2026-03-02T12:00:01.000000Z",
        session_name: `sdk-${protocol}`,
        tags: ["x", "y"],
        events: [{ name: "start", time: "2026-03-02T12:00:00.000000Z" }],
        inputs: { q: 1 },
      }),
    });
    expect(ingest.status).toBe(202);
    const v1 = await ap.tracing.runs.readRun({ runId: id });
    expect(v1.tags).toEqual(["x", "y"]);
    expect(v1.events).toEqual([{ name: "start", time: "2026-03-02T12:00:00.000000Z" }]);
    expect(v1.parentRunIds).toEqual([]);
    const v2 = await ap.tracingV2.runs.getRun({
      runId: id,
      projectId: v1.sessionId ?? "",
      selects: ["TAGS", "EVENTS"],
    });
    expect(v2.tags).toEqual(["x", "y"]);
    expect(v2.events).toEqual(v1.events);
  });

  it("refuses what JSON cannot hold before sending anything, naming the field", async () => {
    const ap = client(protocol);
    const thread = await ap.agents.threads.createThread();
    const threadId = thread.threadId ?? "";
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const cases: [unknown, string][] = [
      [{ n: 10n }, 'field "input.n" is a bigint, which JSON cannot hold: send a number or a string'],
      [{ list: [1, Number.NaN] }, 'field "input.list[1]" is NaN, which JSON cannot hold'],
      [cyclic, 'field "input.self" refers to itself (a cycle), which JSON cannot hold'],
    ];
    for (const [input, message] of cases) {
      const error = await connectFailure(
        ap.agents.runs.createRun({ threadId, assistantId: "steps", input: input as never }),
      );
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toBe(message);
    }
    expect((await ap.agents.runs.listRuns({ threadId })).runs).toEqual([]);
  });
});

describe.each(PROTOCOLS)("errors over %s", (protocol) => {
  it("are ConnectErrors whose message is the REST API's detail", async () => {
    const ap = client(protocol);
    const missing = "00000000-0000-4000-8000-000000000000";
    const thread = await ap.agents.threads.createThread();
    const pairs: [() => Promise<unknown>, () => ReturnType<typeof rest>, Code][] = [
      [
        () => ap.agents.assistants.getAssistant({ assistantId: missing }),
        () => rest(`/assistants/${missing}`),
        Code.NotFound,
      ],
      [
        () =>
          ap.agents.runs.createRun({
            threadId: thread.threadId ?? "",
            assistantId: "steps",
            multitaskStrategy: "sideways" as never,
          }),
        () =>
          rest(`/threads/${thread.threadId}/runs`, {
            method: "POST",
            body: { assistant_id: "steps", multitask_strategy: "sideways" },
          }),
        Code.InvalidArgument,
      ],
      [
        () => ap.agents.store.getItem({ namespace: ["a", "b.c"], key: "k" }),
        () => rest("/store/items?namespace=a&namespace=b.c&key=k"),
        Code.InvalidArgument,
      ],
    ];
    for (const [call, viaRest, code] of pairs) {
      const error = await connectFailure(call());
      const { body } = await viaRest();
      expect(error).toBeInstanceOf(ConnectError);
      expect(error.code).toBe(code);
      expect(typeof body.detail).toBe("string");
      expect(error.rawMessage).toBe(body.detail);
    }
  });
});

describe.each(PROTOCOLS)("event streams over %s", (protocol) => {
  it("yield each event's id, name and parsed data, as the SSE stream carries them", async () => {
    const ap = client(protocol);
    const thread = await ap.agents.threads.createThread();
    const threadId = thread.threadId ?? "";
    const events = await collect(
      ap.agents.runs.streamRun({
        threadId,
        assistantId: "ticker",
        input: ticker(3, 5),
        streamMode: ["custom", "values"],
      }),
    );
    expect(events.map((e) => e.event)).toEqual([
      "metadata",
      "values",
      "custom",
      "custom",
      "custom",
      "values",
      "end",
    ]);
    expect(events[0]?.data).toMatchObject({ run_id: expect.any(String), attempt: 1 });
    expect(events.filter((e) => e.event === "custom").map((e) => e.data)).toEqual([
      { tick: 0 },
      { tick: 1 },
      { tick: 2 },
    ]);
    for (const e of events) expect(e.id).toMatch(/^\d+-\d+$/);
    // The same events as the official LangGraph SDK reads them from the REST SSE stream.
    const runId = runIdOf(events);
    const sse = await collect(app.sdk.runs.joinStream(threadId, runId, { lastEventId: "-1" }));
    expect(events).toEqual(sse.map(({ id, event, data }) => ({ id, event, data })));
  });

  it("end at once on an error that is not a drop, without reconnecting", async () => {
    const infos: ReconnectInfo[] = [];
    const ap = createClient({
      baseUrl: app.t.baseUrl,
      apiKey: app.t.adminKey,
      protocol,
      reconnect: { ...RECONNECT, onReconnect: (info) => infos.push(info) },
    });
    const error = await connectFailure(
      collect(ap.agents.runs.joinRunStream({ runId: "00000000-0000-4000-8000-000000000000" })),
    );
    expect(error.code).toBe(Code.NotFound);
    expect(infos).toEqual([]);
  });
});

/** The path of a Connect and gRPC-Web RPC, which the proxy looks for in the request bytes. */
const rpcPath = (method: string) => `/agentplane.agents.v1.RunService/${method}`;
/**
 * Bytes of answer after which the proxy cuts: past the response headers and the first few events,
 * well before the end of a ticker run of 30 ticks.
 */
const CUT_AFTER_BYTES = 700;

describe.each(["connect", "grpc-web"] as const)("resumption over %s", (protocol) => {
  const through = (infos: ReconnectInfo[], reconnect: boolean) =>
    createClient({
      baseUrl: proxy.baseUrl,
      apiKey: app.t.adminKey,
      protocol,
      reconnect: reconnect ? { ...RECONNECT, onReconnect: (info) => infos.push(info) } : false,
    });

  /** Every event of a run, read afterwards from the start. */
  const replay = (threadId: string, runId: string) =>
    collect(client().agents.runs.joinRunStream({ threadId, runId, lastEventId: "-1" }));

  it("a streamed run dropped twice continues as a join of its run: every event once, in order", async () => {
    const infos: ReconnectInfo[] = [];
    const ap = through(infos, true);
    const thread = await client().agents.threads.createThread();
    const threadId = thread.threadId ?? "";
    const cuts = proxy.cuts;
    void proxy.cutNext(rpcPath("StreamRun"), CUT_AFTER_BYTES);
    void proxy.cutNext(rpcPath("JoinRunStream"), CUT_AFTER_BYTES);
    const events: StreamEvent[] = await collect(
      ap.agents.runs.streamRun({
        threadId,
        assistantId: "ticker",
        input: ticker(30, 40),
        streamMode: ["custom", "values"],
      }),
    );
    expect(proxy.cuts - cuts).toBe(2);
    expect(infos.map((i) => i.attempt)).toEqual([1, 1]);
    for (const info of infos) expect(info.error.code).toBe(Code.Unknown);
    const runId = runIdOf(events);
    const all = await replay(threadId, runId);
    expect(events).toEqual(all);
    expect(events.filter((e) => e.event === "custom")).toHaveLength(30);
    // Each reconnection resumed after an event it had delivered.
    for (const info of infos) expect(events.some((e) => e.id === info.lastEventId)).toBe(true);
  });

  it("a dropped join is reopened after its last event", async () => {
    const infos: ReconnectInfo[] = [];
    const ap = through(infos, true);
    const thread = await client().agents.threads.createThread();
    const threadId = thread.threadId ?? "";
    const created = await client().agents.runs.createRun({
      threadId,
      assistantId: "ticker",
      input: ticker(30, 40),
      streamMode: ["custom", "values"],
    });
    const runId = created.runId ?? "";
    const cuts = proxy.cuts;
    void proxy.cutNext(rpcPath("JoinRunStream"), CUT_AFTER_BYTES);
    const events = await collect(ap.agents.runs.joinRunStream({ threadId, runId, lastEventId: "-1" }));
    expect(proxy.cuts - cuts).toBe(1);
    expect(infos).toHaveLength(1);
    expect(events).toEqual(await replay(threadId, runId));
  });

  it("without reconnection, a drop ends the stream with the transport's error", async () => {
    const ap = through([], false);
    const thread = await client().agents.threads.createThread();
    void proxy.cutNext(rpcPath("StreamRun"), CUT_AFTER_BYTES);
    const seen: StreamEvent[] = [];
    const error = await connectFailure(
      (async () => {
        for await (const event of ap.agents.runs.streamRun({
          threadId: thread.threadId ?? "",
          assistantId: "ticker",
          input: ticker(30, 40),
          streamMode: ["custom"],
        }))
          seen.push(event);
      })(),
    );
    expect(error.code).toBe(Code.Unknown);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((e) => e.event === "custom").length).toBeLessThan(30);
  });
});
