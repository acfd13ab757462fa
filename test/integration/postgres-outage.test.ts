/**
 * Stop Postgres under a running server: /ok?check_db=1 answers 503 and gRPC health reports
 * NOT_SERVING, API calls answer 503 at once, the process stays up, and everything recovers by itself
 * when Postgres returns.
 */
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { type App, startApp } from "../../server/app.js";
import { createLogger } from "../../server/logger.js";
import {
  type EmbeddedPostgresServer,
  startEmbeddedPostgres,
} from "../../server/store/postgres/embedded-postgres.js";
import { parsePrometheusText, sampleValue } from "../support/prometheus-text.js";
import { testConfig } from "../support/test-config.js";

let dir: string;
let pg: EmbeddedPostgresServer;
let app: App;
let port: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "agentplane-outage-"));
  // As root, embedded Postgres runs as the `postgres` user, which must be able to enter the directory.
  await chmod(dir, 0o711);
  pg = await startEmbeddedPostgres({ dataDir: join(dir, "pg"), log: () => {}, durable: false });
  port = Number(new URL(pg.url).port);
  app = await startApp(
    testConfig({
      databaseUrl: pg.url,
      dataDir: join(dir, "data"),
      bootstrapApiKey: "ap_pt_outage_test_key_0123456789",
      dbPoolMax: 4,
      shutdownGraceMs: 1_000,
    }),
    createLogger("error"),
  );
});

afterAll(async () => {
  await app?.stop();
  await pg?.stop();
  await rm(dir, { recursive: true, force: true });
});

it("reports the outage and recovers without a restart", async () => {
  const base = `http://127.0.0.1:${app.address.port}`;
  const health = createClient(Health, createGrpcTransport({ baseUrl: base }));
  const status = async () => (await health.check({})).status;
  const ok = () => fetch(`${base}/ok?check_db=1`);

  expect((await ok()).status).toBe(200);
  expect(await status()).toBe(HealthCheckResponse_ServingStatus.SERVING);

  await pg.stop();
  const down = await ok();
  expect(down.status).toBe(503);
  expect(((await down.json()) as { detail: string }).detail).toMatch(/^postgres is unreachable(;|$)/);
  await expect.poll(status, { timeout: 15_000 }).toBe(HealthCheckResponse_ServingStatus.NOT_SERVING);
  expect((await fetch(`${base}/ok`)).status).toBe(503);
  // The process is still serving what needs no database.
  expect((await fetch(`${base}/info`)).status).toBe(200);
  // API calls are refused at once with a 503 that says what to do, not a 500 and not a hang.
  const started = performance.now();
  const search = await fetch(`${base}/threads/search`, {
    method: "POST",
    headers: { "x-api-key": "ap_pt_outage_test_key_0123456789", "content-type": "application/json" },
    body: "{}",
  });
  expect(search.status).toBe(503);
  expect(await search.json()).toEqual({ detail: "the database is unreachable; retry in a few seconds" });
  // Refused without touching the database: only a loaded machine's scheduling delays it.
  expect(performance.now() - started).toBeLessThan(2_000);
  // Metrics still answer, with what the process knows; what Postgres would tell is absent.
  const metrics = async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    return parsePrometheusText(await res.text());
  };
  const during = await metrics();
  expect(sampleValue(during, "agentplane_metrics_database_up")).toBe(0);
  expect(during.get("agentplane_agent_runs")?.samples).toEqual([]);
  expect(
    sampleValue(during, "agentplane_http_requests_total", { route: "/threads/search", status: "503" }),
  ).toBe(1);
  const dump = await fetch(`${base}/internal/heapdump`, {
    method: "POST",
    headers: { "x-api-key": "ap_pt_outage_test_key_0123456789" },
  });
  expect(dump.status).toBe(503);

  pg = await startEmbeddedPostgres({ dataDir: join(dir, "pg"), port, log: () => {}, durable: false });
  await expect.poll(async () => (await ok()).status, { timeout: 20_000, interval: 250 }).toBe(200);
  await expect.poll(status, { timeout: 15_000 }).toBe(HealthCheckResponse_ServingStatus.SERVING);
  const me = await fetch(`${base}/api/v1/whoami`, {
    headers: { "x-api-key": "ap_pt_outage_test_key_0123456789" },
  });
  expect(me.status).toBe(200);
  // A pooled connection from before the outage may fail the first read after it; the next one is fresh.
  await expect
    .poll(async () => sampleValue(await metrics(), "agentplane_metrics_database_up"), { timeout: 10_000 })
    .toBe(1);
});
