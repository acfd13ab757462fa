/**
 * Crons through the official `@langchain/langgraph-sdk` (`client.crons.*`) and our generated
 * Connect client, on a server whose clock the test moves: creation (thread and stateless) with
 * `next_run_date` computed in the cron's time zone, validation (bad schedule, time zone, end time,
 * unknown assistant: 4xx and nothing written), search with filters, sort, pagination and select,
 * count, update (schedule, enabled, end_time cleared) and delete; and firing: a due cron creates
 * its run once per tick, with its payload and metadata, on its thread or on a new thread kept or
 * deleted as `on_run_completed` says, and catches up one missed time (not every one) after downtime.
 */
import { type Client, createClient as createConnectClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Client as LangGraphClient } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CronService } from "../../gen/agentplane/agents/v1/cron_service_pb.js";
import type { Clock } from "../../server/clock.js";
import { DEFAULT_WEBHOOK_SETTINGS } from "../../server/config.js";
import { RUNS_GRAPHS, sdkClient, waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MINUTE = 60_000;
/** The test's clock: a fixed instant the tests move forward; ticks read it. */
const clock: Clock & { at: Date } = { at: new Date("2031-03-04T10:00:30.000Z"), now: () => clock.at };

let t: TestApp;
let sdk: LangGraphClient;

beforeAll(async () => {
  // Ticks every second so a moved clock is seen quickly.
  // Webhooks off: the crons here name hosts that do not resolve offline, which a server that calls
  // webhooks refuses (webhooks.test.ts checks that for crons).
  t = await startTestApp(
    { graphConfigPath: RUNS_GRAPHS, webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, enabled: false } },
    { hooks: { clock, cronTickSeconds: 1 } },
  );
  sdk = sdkClient(t.baseUrl, t.adminKey);
});
afterAll(async () => {
  await t?.stop();
});

interface CronJson {
  cron_id: string;
  assistant_id: string;
  thread_id: string | null;
  schedule: string;
  timezone: string | null;
  end_time: string | null;
  enabled: boolean;
  on_run_completed: string | null;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
  next_run_date: string | null;
  user_id: string | null;
  created_at: string;
  updated_at: string;
}

/** Every run of the workspace's thread `threadId`. */
async function runsOf(threadId: string) {
  return sdk.runs.list(threadId, { limit: 100 });
}

/** Moves the clock and waits until `cronId`'s next_run_date has moved past the new time. */
async function advanceTo(at: Date, cronId: string): Promise<CronJson> {
  clock.at = at;
  return waitFor(
    async () => (await (await t.fetch(`/runs/crons/${cronId}`)).json()) as CronJson,
    (c) => c.next_run_date !== null && Date.parse(c.next_run_date) > at.getTime(),
  );
}

describe("crons through the LangGraph SDK", () => {
  it("/info reports crons", async () => {
    const info = (await (await t.fetch("/info")).json()) as { flags: { crons: boolean } };
    expect(info.flags.crons).toBe(true);
  });

  it("creates a thread cron with next_run_date in its time zone, and the Cron shape", async () => {
    const thread = await sdk.threads.create();
    const cron = (await sdk.crons.createForThread(thread.thread_id, "steps", {
      schedule: "30 9 * * *",
      timezone: "Europe/Paris",
      input: { topic: "paris" },
      metadata: { team: "blue" },
    })) as unknown as CronJson;
    expect(cron).toMatchObject({
      thread_id: thread.thread_id,
      schedule: "30 9 * * *",
      timezone: "Europe/Paris",
      end_time: null,
      enabled: true,
      on_run_completed: null,
      metadata: { team: "blue" },
      payload: { input: { topic: "paris" }, metadata: { team: "blue" } },
    });
    expect(cron.cron_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(cron.assistant_id).toMatch(/^[0-9a-f-]{36}$/);
    // 09:30 in Paris on 4 March 2031 (UTC+1) is 08:30 UTC, already past at 10:00 UTC: the next day.
    expect(cron.next_run_date).toBe("2031-03-05T08:30:00.000Z");
    expect(Date.parse(cron.created_at)).not.toBeNaN();
  });

  it("refuses bad input with a 4xx that says what to fix, and writes nothing", async () => {
    const before = await sdk.crons.count();
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{ assistant_id: "steps", schedule: "* * * *" }, 422, /5 fields/],
      [{ assistant_id: "steps", schedule: "0 0 * * * *" }, 422, /5 fields/],
      [{ assistant_id: "steps", schedule: "61 * * * *" }, 422, /not a valid cron expression/],
      [{ assistant_id: "steps", schedule: "* * * * *", timezone: "Mars/Olympus" }, 422, /IANA time zone/],
      [
        { assistant_id: "steps", schedule: "* * * * *", end_time: "2020-01-01T00:00:00Z" },
        422,
        /in the past/,
      ],
      [{ assistant_id: "steps", schedule: "* * * * *", end_time: "tomorrow" }, 422, /ISO 8601/],
      [{ assistant_id: "nope", schedule: "* * * * *" }, 404, /assistant "nope" not found/],
      [
        { assistant_id: "steps", schedule: "* * * * *", on_run_completed: "archive" },
        422,
        /on_run_completed/,
      ],
      [{ assistant_id: "steps", schedule: "* * * * *", stream_mode: "telepathy" }, 422, /stream_mode/],
      [{ assistant_id: "steps", schedule: "" }, 422, /schedule is required/],
    ];
    for (const [body, status, detail] of cases) {
      const res = await t.fetch("/runs/crons", { method: "POST", body: JSON.stringify(body) });
      const json = (await res.json()) as { detail: string };
      expect([res.status, json.detail], JSON.stringify(body)).toEqual([
        status,
        expect.stringMatching(detail),
      ]);
    }
    const missing = await t.fetch(`/threads/${crypto.randomUUID()}/runs/crons`, {
      method: "POST",
      body: JSON.stringify({ assistant_id: "steps", schedule: "* * * * *" }),
    });
    expect(missing.status).toBe(404);
    const thread = await sdk.threads.create();
    const onThread = await t.fetch(`/threads/${thread.thread_id}/runs/crons`, {
      method: "POST",
      body: JSON.stringify({ assistant_id: "steps", schedule: "* * * * *", on_run_completed: "keep" }),
    });
    expect(onThread.status).toBe(422);
    expect(await sdk.crons.count()).toBe(before);
  });

  it("searches with filters, sort, pagination and select; counts", async () => {
    const thread = await sdk.threads.create();
    const made: CronJson[] = [];
    for (const [i, schedule] of ["5 * * * *", "1 * * * *", "3 * * * *"].entries()) {
      made.push(
        (await sdk.crons.createForThread(thread.thread_id, "chat", {
          schedule,
          metadata: { search: "yes", i },
        })) as unknown as CronJson,
      );
    }
    const stateless = (await sdk.crons.create("chat", {
      schedule: "0 0 1 1 *",
      metadata: { search: "yes", i: 3 },
      enabled: false,
    })) as unknown as CronJson;

    const all = await sdk.crons.search({ metadata: { search: "yes" }, limit: 10 });
    expect(all.map((c) => c.cron_id)).toEqual([stateless, ...made.toReversed()].map((c) => c.cron_id));
    const byNext = await sdk.crons.search({
      threadId: thread.thread_id,
      sortBy: "next_run_date",
      sortOrder: "asc",
    });
    expect(byNext.map((c) => c.schedule)).toEqual(["1 * * * *", "3 * * * *", "5 * * * *"]);
    const page = await t.fetch("/runs/crons/search", {
      method: "POST",
      body: JSON.stringify({ metadata: { search: "yes" }, limit: 2, offset: 1, sort_order: "asc" }),
    });
    expect(page.headers.get("x-pagination-total")).toBe("4");
    expect(page.headers.get("x-pagination-next")).toBe("3");
    expect(((await page.json()) as CronJson[]).map((c) => c.cron_id)).toEqual([
      made[1]?.cron_id,
      made[2]?.cron_id,
    ]);
    const selected = await sdk.crons.search({
      metadata: { search: "yes" },
      select: ["cron_id", "enabled"],
      limit: 1,
    });
    expect(selected).toEqual([{ cron_id: stateless.cron_id, enabled: false }]);
    expect((await sdk.crons.search({ metadata: { search: "yes" }, enabled: false })).length).toBe(1);
    expect(await sdk.crons.count({ metadata: { search: "yes" } })).toBe(4);
    expect(await sdk.crons.count({ threadId: thread.thread_id })).toBe(3);
    expect(await sdk.crons.count({ assistantId: "chat", metadata: { search: "yes" } })).toBe(4);
    expect(await sdk.crons.count({ assistantId: "steps", metadata: { search: "yes" } })).toBe(0);

    const badSort = await t.fetch("/runs/crons/search", {
      method: "POST",
      body: JSON.stringify({ sort_by: "schedule" }),
    });
    expect(badSort.status).toBe(422);
    expect(((await badSort.json()) as { detail: string }).detail).toMatch(/sort_by must be one of/);
    const badSelect = await t.fetch("/runs/crons/search", {
      method: "POST",
      body: JSON.stringify({ select: ["nope"] }),
    });
    expect(badSelect.status).toBe(422);
    for (const c of [...made, stateless]) await sdk.crons.delete(c.cron_id);
  });

  it("updates schedule, enabled and end_time (null clears it), and deletes", async () => {
    const cron = (await sdk.crons.create("steps", {
      schedule: "0 12 * * *",
      endTime: new Date(clock.at.getTime() + 30 * 24 * 60 * MINUTE).toISOString(),
      input: { topic: "old" },
    })) as unknown as CronJson;
    expect(cron.end_time).not.toBeNull();
    expect(cron.on_run_completed).toBe("delete");
    const updated = (await sdk.crons.update(cron.cron_id, {
      schedule: "15 11 * * *",
      endTime: null,
      enabled: false,
      input: { topic: "new" },
      onRunCompleted: "keep",
    })) as unknown as CronJson;
    expect(updated).toMatchObject({
      schedule: "15 11 * * *",
      end_time: null,
      enabled: false,
      on_run_completed: "keep",
      next_run_date: "2031-03-04T11:15:00.000Z",
      payload: { input: { topic: "new" } },
    });
    expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(cron.updated_at));
    const bad = await t.fetch(`/runs/crons/${cron.cron_id}`, {
      method: "PATCH",
      body: JSON.stringify({ schedule: "every day" }),
    });
    expect(bad.status).toBe(422);

    await sdk.crons.delete(cron.cron_id);
    expect((await t.fetch(`/runs/crons/${cron.cron_id}`)).status).toBe(404);
    await expect(sdk.crons.delete(cron.cron_id)).rejects.toThrow(/404/);
  });
});

describe("firing with an injected clock", () => {
  it("a thread cron creates one run per due time, with its payload and metadata", async () => {
    const thread = await sdk.threads.create();
    const cron = (await sdk.crons.createForThread(thread.thread_id, "steps", {
      schedule: "*/10 * * * *",
      input: { topic: "tick" },
      metadata: { origin: "cron" },
      webhook: "https://hooks.example.com/cron",
    })) as unknown as CronJson;
    expect(cron.next_run_date).toBe("2031-03-04T10:10:00.000Z");
    expect(await runsOf(thread.thread_id)).toEqual([]);

    const after = await advanceTo(new Date("2031-03-04T10:10:01.000Z"), cron.cron_id);
    expect(after.next_run_date).toBe("2031-03-04T10:20:00.000Z");
    const runs = await waitFor(
      () => runsOf(thread.thread_id),
      (r) => r.length === 1 && r[0]?.status === "success",
    );
    expect(runs[0]?.metadata).toMatchObject({ origin: "cron", cron_id: cron.cron_id });
    expect((runs[0] as unknown as { kwargs: unknown }).kwargs).toMatchObject({
      webhook: "https://hooks.example.com/cron",
    });
    const state = await sdk.threads.getState(thread.thread_id);
    expect(state.values).toMatchObject({ topic: "tick", text: "published: draft about tick" });

    // Down for an hour: six times were missed; the cron fires once for them, then keeps its schedule.
    const later = await advanceTo(new Date("2031-03-04T11:25:00.000Z"), cron.cron_id);
    expect(later.next_run_date).toBe("2031-03-04T11:30:00.000Z");
    const two = await waitFor(
      () => runsOf(thread.thread_id),
      (r) => r.length >= 2 && r.every((x) => x.status === "success"),
    );
    expect(two.length).toBe(2);

    // Disabled, it does not fire; deleted, it is gone.
    await sdk.crons.update(cron.cron_id, { enabled: false });
    await sdk.crons.delete(cron.cron_id);
  });

  it("a stateless cron runs each time on a new thread: deleted by default, kept with keep", async () => {
    const deleting = (await sdk.crons.create("steps", {
      schedule: "45 11 * * *",
      input: { topic: "gone" },
      metadata: { kind: "deleting" },
    })) as unknown as CronJson;
    const keeping = (await sdk.crons.create("steps", {
      schedule: "45 11 * * *",
      input: { topic: "kept" },
      metadata: { kind: "keeping" },
      onRunCompleted: "keep",
    })) as unknown as CronJson;
    expect(deleting.thread_id).toBeNull();
    const threadsBefore = await sdk.threads.count();

    clock.at = new Date("2031-03-04T11:45:00.000Z");
    for (const c of [deleting, keeping])
      await waitFor(
        async () => (await (await t.fetch(`/runs/crons/${c.cron_id}`)).json()) as CronJson,
        (x) => x.next_run_date === "2031-03-05T11:45:00.000Z",
      );
    const kept = await waitFor(
      () => sdk.threads.search({ metadata: { graph_id: "steps" }, limit: 100 }),
      (list) => list.some((th) => (th.values as { topic?: string } | null)?.topic === "kept"),
    );
    const keptThread = kept.find((th) => (th.values as { topic?: string } | null)?.topic === "kept");
    const [keptRun] = await runsOf(keptThread?.thread_id ?? "");
    expect(keptRun?.metadata).toMatchObject({ kind: "keeping", cron_id: keeping.cron_id });
    // The deleting cron's thread went when its run ended: one thread more than before, the kept one.
    await waitFor(
      () => sdk.threads.count(),
      (n) => n === threadsBefore + 1,
    );
    for (const c of [deleting, keeping]) await sdk.crons.delete(c.cron_id);
  });

  it("end_time stops it: next_run_date becomes null after the last time before it", async () => {
    const thread = await sdk.threads.create();
    const cron = (await sdk.crons.createForThread(thread.thread_id, "steps", {
      schedule: "0 * * * *",
      input: { topic: "last" },
      endTime: "2031-03-04T12:30:00Z",
    })) as unknown as CronJson;
    expect(cron.next_run_date).toBe("2031-03-04T12:00:00.000Z");
    clock.at = new Date("2031-03-04T12:00:05.000Z");
    const done = await waitFor(
      async () => (await (await t.fetch(`/runs/crons/${cron.cron_id}`)).json()) as CronJson,
      (c) => c.next_run_date === null,
    );
    expect(done.enabled).toBe(true);
    await waitFor(
      () => runsOf(thread.thread_id),
      (r) => r.length === 1,
    );
    await sdk.crons.delete(cron.cron_id);
  });

  it("deleting the assistant deletes its crons", async () => {
    const assistant = await sdk.assistants.create({ graphId: "steps", name: "cron owner" });
    const cron = (await sdk.crons.create(assistant.assistant_id, {
      schedule: "0 0 * * *",
    })) as unknown as CronJson;
    expect(cron.assistant_id).toBe(assistant.assistant_id);
    await sdk.assistants.delete(assistant.assistant_id);
    expect((await t.fetch(`/runs/crons/${cron.cron_id}`)).status).toBe(404);
  });

  it("deleting the thread deletes its crons", async () => {
    const thread = await sdk.threads.create();
    const cron = (await sdk.crons.createForThread(thread.thread_id, "steps", {
      schedule: "0 0 * * *",
    })) as unknown as CronJson;
    await sdk.threads.delete(thread.thread_id);
    expect((await t.fetch(`/runs/crons/${cron.cron_id}`)).status).toBe(404);
  });
});

/** Our generated CronService client over each wire protocol: Connect, gRPC-Web and gRPC (h2c). */
const PROTOCOLS: [string, () => Client<typeof CronService>][] = [
  ["connect (our SDK's transport)", () => createConnectClient(CronService, t.client().transport)],
  [
    "grpc-web (our SDK's transport)",
    () => createConnectClient(CronService, t.client({ protocol: "grpc-web" }).transport),
  ],
  [
    "grpc",
    () =>
      createConnectClient(
        CronService,
        createGrpcTransport({
          baseUrl: t.baseUrl,
          interceptors: [
            (next) => (req) => {
              req.header.set("x-api-key", t.adminKey);
              return next(req);
            },
          ],
        }),
      ),
  ],
];

describe("crons over our generated client", () => {
  it.each(PROTOCOLS)("%s: creates, reads, searches, counts, updates and deletes", async (_, make) => {
    const client = make();
    const created = await client.createCron({
      assistantId: "steps",
      schedule: "0 6 * * 1",
      metadata: { kind: { case: "structValue", value: { fields: {} } } },
    });
    expect(created.cronId).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.onRunCompleted?.kind).toEqual({ case: "stringValue", value: "delete" });
    const got = await client.getCron({ cronId: created.cronId ?? "" });
    expect(got.schedule).toBe("0 6 * * 1");
    const found = await client.searchCrons({ assistantId: "steps", sortBy: "created_at", limit: 100 });
    expect(found.crons.map((c) => c.cronId)).toContain(created.cronId);
    const { count } = await client.countCrons({});
    expect(count).toBeGreaterThan(0);
    const updated = await client.updateCron({ cronId: created.cronId ?? "", enabled: false });
    expect(updated.enabled).toBe(false);
    await client.deleteCron({ cronId: created.cronId ?? "" });
    await expect(client.getCron({ cronId: created.cronId ?? "" })).rejects.toThrow(/not found/);
    await expect(client.createCron({ assistantId: "steps", schedule: "bad" })).rejects.toThrow(/5 fields/);
  });
});
