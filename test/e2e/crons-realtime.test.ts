/**
 * One cron on the real clock, with the default tick: an every-minute cron created through the
 * official SDK fires at its next minute (waiting up to a minute is the price of one real test), its
 * run starts within seconds of that minute on the cron's thread, and `next_run_date` moves one
 * minute on.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type RunsApp, startRunsApp, waitFor } from "../support/runs-app.js";

let app: RunsApp;

beforeAll(async () => {
  app = await startRunsApp();
});
afterAll(async () => {
  await app?.t.stop();
});

/** How late after its minute a run may be created: the longest tick (5 s), a queue poll (2 s), load. */
const LATENESS_MS = 12_000;

it("an every-minute cron fires at its next minute", async () => {
  const { sdk } = app;
  const thread = await sdk.threads.create();
  const cron = await sdk.crons.createForThread(thread.thread_id, "steps", {
    schedule: "* * * * *",
    input: { topic: "minute" },
  });
  const due = Date.parse(cron.next_run_date);
  expect(due % 60_000).toBe(0);
  expect(due - Date.now()).toBeLessThanOrEqual(60_000);

  const [run] = await waitFor(
    () => sdk.runs.list(thread.thread_id),
    (runs) => runs.length > 0,
    60_000 + LATENESS_MS + 5_000,
  );
  const created = Date.parse(run?.created_at ?? "");
  expect(created).toBeGreaterThanOrEqual(due);
  expect(created - due).toBeLessThan(LATENESS_MS);
  const [after] = await sdk.crons.search({ threadId: thread.thread_id });
  expect(Date.parse(after?.next_run_date ?? "")).toBe(due + 60_000);
  await sdk.crons.delete(cron.cron_id);
}, 90_000);
