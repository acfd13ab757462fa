import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import { StructSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServerSentEventSchema } from "../../../gen/agentplane/api/v1/server_sent_event_pb.js";
import { writeConnectError } from "./http-status.js";
import { createSseFramer, errorFrame, writeSse } from "./sse-writer.js";

const eventFramer = createSseFramer(ServerSentEventSchema, () => null);
const plainFramer = createSseFramer(StructSchema, (message) => ({ wrapped: message as JsonValue }));

describe("createSseFramer", () => {
  it("frames ServerSentEvent messages with their own id, event and data", () => {
    const message = create(ServerSentEventSchema, {
      id: "1700000000000-3",
      event: "values",
      data: fromJson(ValueSchema, { a: [1, "two\nlines"] }),
    });
    expect(eventFramer(message, 9)).toBe(
      'event: values\ndata: {"a":[1,"two\\nlines"]}\nid: 1700000000000-3\n\n',
    );
  });

  it("omits an empty id, defaults the event to message and sends null for no data", () => {
    expect(eventFramer(create(ServerSentEventSchema, { id: "7" }), 1)).toBe(
      "event: message\ndata: null\nid: 7\n\n",
    );
    expect(eventFramer(create(ServerSentEventSchema, { event: "ping" }), 1)).toBe(
      "event: ping\ndata: null\n\n",
    );
  });

  it("frames a message with no id, event or data as a comment line, which no parser takes for an event", () => {
    expect(eventFramer(create(ServerSentEventSchema), 1)).toBe(": stream opened\n");
  });

  it("strips line breaks from id and event so they cannot forge frame lines", () => {
    const message = create(ServerSentEventSchema, { id: "1\ndata: x", event: "a\r\nb" });
    expect(eventFramer(message, 1)).toBe("event: ab\ndata: null\nid: 1data: x\n\n");
  });

  it("frames other messages with a sequence id, event message and the encoded JSON", () => {
    expect(plainFramer("x", 3)).toBe('id: 3\nevent: message\ndata: {"wrapped":"x"}\n\n');
  });
});

describe("errorFrame", () => {
  it("names the code in snake_case and carries the raw message", () => {
    expect(errorFrame(new ConnectError("run r1 is gone", Code.NotFound))).toBe(
      'event: error\ndata: {"error":"not_found","message":"run r1 is gone"}\n\n',
    );
    expect(errorFrame(new ConnectError("x", Code.FailedPrecondition))).toContain(
      '"error":"failed_precondition"',
    );
  });
});

/** What the generator of the current scenario saw when it finished. */
const finished: { scenario: string; stopped: boolean }[] = [];
const shutdown = new AbortController();

type Scenario = (stop: AbortSignal) => AsyncIterable<string>;

const scenarios: Record<string, Scenario> = {
  async *three() {
    yield "a";
    yield "b";
    yield "c";
  },
  async *idle() {
    await sleep(150);
    yield "late";
  },
  failFirst: () => ({
    [Symbol.asyncIterator]: () => ({
      next: () => Promise.reject(new ConnectError("no such run", Code.NotFound)),
    }),
  }),
  async *failLater() {
    yield "first";
    throw new ConnectError("the graph crashed", Code.Internal);
  },
  async *hold(stop) {
    try {
      yield "first";
      await new Promise((resolve) => stop.addEventListener("abort", resolve, { once: true }));
      // Still producing after the stop: only the writer's return() gets the generator to finally.
      yield "after the stop";
      yield "never sent";
    } finally {
      finished.push({ scenario: "hold", stopped: stop.aborted });
    }
  },
};

let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const name = (req.url ?? "").slice(1);
    const disconnected = new AbortController();
    res.once("close", () => disconnected.abort());
    const stop = AbortSignal.any([disconnected.signal, shutdown.signal]);
    writeSse(res, scenarios[name]!(stop), plainFramer, {
      heartbeatMs: 20,
      stop,
      headers: () => ({ "content-location": `/runs/${name}` }),
      toError: (error) => ConnectError.from(error),
    }).catch((error: ConnectError) => writeConnectError(res, error));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("writeSse over HTTP", () => {
  it("sends the SSE headers, the handler's headers and one frame per message", async () => {
    const res = await fetch(`${base}/three`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    expect(res.headers.get("content-location")).toBe("/runs/three");
    expect(await res.text()).toBe(
      ["a", "b", "c"].map((m, i) => `id: ${i + 1}\nevent: message\ndata: {"wrapped":"${m}"}\n\n`).join(""),
    );
  });

  it("sends heartbeat comments while idle, which also start the response", async () => {
    const res = await fetch(`${base}/idle`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/^(: heartbeat\n){2,}id: 1\nevent: message\ndata: \{"wrapped":"late"\}\n\n$/);
  });

  it("rejects with the error when the stream fails before any frame, so a REST error can answer", async () => {
    const res = await fetch(`${base}/failFirst`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "no such run" });
  });

  it("sends an error event and ends when the stream fails after it began", async () => {
    const res = await fetch(`${base}/failLater`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(
      'id: 1\nevent: message\ndata: {"wrapped":"first"}\n\n' +
        'event: error\ndata: {"error":"internal","message":"the graph crashed"}\n\n',
    );
  });

  it("stops on client disconnect and returns the generator so its finally runs", async () => {
    const client = new AbortController();
    const res = await fetch(`${base}/hold`, { signal: client.signal });
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('"wrapped":"first"');
    const before = finished.length;
    client.abort();
    await expect.poll(() => finished.length).toBe(before + 1);
    expect(finished.at(-1)).toEqual({ scenario: "hold", stopped: true });
  });

  it("ends streams cleanly when the shutdown signal fires", async () => {
    const res = await fetch(`${base}/hold`);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    const before = finished.length;
    shutdown.abort();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
      text += decoder.decode(chunk.value);
    expect(text).toBe('id: 1\nevent: message\ndata: {"wrapped":"first"}\n\n');
    await expect.poll(() => finished.length).toBe(before + 1);
  });
});
