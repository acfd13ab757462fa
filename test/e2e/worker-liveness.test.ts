import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePrometheusText, sampleValue } from "../support/prometheus-text.js";
import { waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** A stall limit short enough to see within a test (the default is 30 s). */
const STALL_AFTER_MS = 2_000;
/**
 * Connections enough for every worker loop to sit blocked on the lock (one per job type) while
 * the health check and the scrape still get one.
 */
const POOL_MAX = 20;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ dbPoolMax: POOL_MAX }, { hooks: { workerStallAfterMs: STALL_AFTER_MS } });
});
afterAll(() => t?.stop());

const ok = async () => {
  const res = await fetch(`${t.baseUrl}/ok`);
  return { status: res.status, body: (await res.json()) as unknown };
};

const health = async () => {
  const res = await fetch(`${t.baseUrl}/grpc.health.v1.Health/Check`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  return ((await res.json()) as { status: string }).status;
};

describe("/ok and worker liveness", () => {
  it("fails while the job worker loops cannot fetch, though Postgres answers, and recovers", async () => {
    expect(await ok()).toEqual({
      status: 200,
      body: { ok: true, services: { postgres: "ok", queue: "ok", workers: "ok" } },
    });
    const locker = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
    const held = await locker.reserve();
    try {
      await held`begin`;
      // Every fetch waits on this lock, as behind a leaked transaction; new connections still work.
      await held`lock table pgboss.job in access exclusive mode`;
      const down = await waitFor(ok, (r) => r.status === 503);
      expect(down.body).toEqual({
        detail:
          "a job worker loop of this process is stuck (agentplane_queue_worker_up in /metrics names it)",
      });
      expect(await health()).toBe("NOT_SERVING");
      const metrics = parsePrometheusText(await (await fetch(`${t.baseUrl}/metrics`)).text());
      expect(sampleValue(metrics, "agentplane_queue_worker_up", { queue: "agent.run" })).toBe(0);
    } finally {
      await held`rollback`;
      held.release();
      await locker.end({ timeout: 1 });
    }
    expect(await waitFor(ok, (r) => r.status === 200)).toEqual({
      status: 200,
      body: { ok: true, services: { postgres: "ok", queue: "ok", workers: "ok" } },
    });
    expect(await health()).toBe("SERVING");
    const metrics = parsePrometheusText(await (await fetch(`${t.baseUrl}/metrics`)).text());
    expect(sampleValue(metrics, "agentplane_queue_worker_up", { queue: "agent.run" })).toBe(1);
  });
});
