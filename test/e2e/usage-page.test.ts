/**
 * The Granular Usage web page in a real browser (Debian's chromium driven by playwright-core)
 * against a real server with seeded usage: controls, chart data, table and the CSV download.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { unconfined } from "../../server/store/workspace-scope.js";
import { recordTraceUsage } from "../../server/tracing/usage-recorder.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** What the page exposes for tests as `window.__usageChart`. */
interface UsageChart {
  buckets: string[];
  labels: string[];
  data: number[][];
  stride: { days: number; hours: number };
  unit: string;
  groupBy: string;
  query: string;
}

let t: TestApp;
let context: BrowserContext;
let page: Page;
let userDataDir: string;
let workspaceName: string;
const pageErrors: string[] = [];
/**
 * How long the page may take to show a result: a headless browser shares the 2 CI cores with the
 * server and the other test files, so vitest's default second for expect.poll is too tight.
 */
const PAGE_WAIT = { timeout: 5_000 };

beforeAll(async () => {
  t = await startTestApp();
  const me = await t.client().identity.whoami({});
  const workspaceId = me.workspace?.id ?? "";
  workspaceName = me.workspace?.displayName ?? "";
  const projects = { alpha: uuidv7(), beta: uuidv7() };
  const sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`insert into tracing_projects (id, workspace_id, name)
              values (${projects.alpha}, ${workspaceId}, 'alpha'), (${projects.beta}, ${workspaceId}, 'beta')`;
    // March 2026: the 1st is a Sunday, so its ISO week starts on Monday, February 23rd.
    const traces: [string, string][] = [
      [projects.alpha, "2026-03-01T08:00:00Z"],
      [projects.alpha, "2026-03-01T09:00:00Z"],
      [projects.beta, "2026-03-03T10:00:00Z"],
      [projects.alpha, "2026-03-07T23:30:00Z"],
    ];
    for (const [projectId, at] of traces) {
      await recordTraceUsage(unconfined(sql), {
        workspaceId,
        projectId,
        userId: me.user?.id ?? null,
        apiKeyId: me.apiKeyId,
        receivedAt: new Date(at),
      });
    }
  } finally {
    await sql.end();
  }

  userDataDir = await mkdtemp(join(tmpdir(), "agentplane-chromium-"));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    acceptDownloads: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") pageErrors.push(message.text());
  });
});

afterAll(async () => {
  await context?.close();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
  await t?.stop();
});

/** The chart data once the page has drawn the query containing `part`. */
async function chartFor(part: string): Promise<UsageChart> {
  await page.waitForFunction(
    (p) => (window as { __usageChart?: UsageChart }).__usageChart?.query.includes(p),
    part,
  );
  return page.evaluate(() => (window as unknown as { __usageChart: UsageChart }).__usageChart);
}

it("shows traces per bucket and project, follows the controls and exports the CSV", async () => {
  await page.goto(`${t.baseUrl}/settings/billing/usage`);
  await expect.poll(() => page.title(), PAGE_WAIT).toContain("Granular Usage");
  expect(await page.evaluate(() => typeof (window as { uPlot?: unknown }).uPlot)).toBe("function");

  await page.getByLabel("API key").fill(t.adminKey);
  await page.getByRole("button", { name: "Use key" }).click();
  await expect
    .poll(() => page.getByRole("checkbox", { name: workspaceName }).isChecked(), PAGE_WAIT)
    .toBe(true);
  await chartFor("start_time");

  await page.getByLabel("Time range").selectOption("custom");
  await page.getByLabel("Start (UTC)").fill("2026-03-01T00:00");
  await page.getByLabel("End (UTC)").fill("2026-03-08T00:00");
  await page.getByLabel("Group by").selectOption("project");
  await page.getByRole("button", { name: "Show usage" }).click();
  const daily = await chartFor("group_by=project");
  expect(daily.stride).toEqual({ days: 1, hours: 0 });
  expect(daily.buckets).toEqual([1, 2, 3, 4, 5, 6, 7].map((d) => `2026-03-0${d}T00:00:00.000Z`));
  expect(daily.labels).toEqual(["alpha", "beta"]);
  expect(daily.data.slice(1)).toEqual([
    [2, 0, 0, 0, 0, 0, 1],
    [0, 0, 1, 0, 0, 0, 0],
  ]);
  expect(daily.data[0]?.[0]).toBe(Date.parse("2026-03-01T00:00:00Z") / 1000);
  expect(await page.locator("#chart canvas").count()).toBeGreaterThan(0);
  await expect.poll(() => page.locator("#usage-table tbody tr").count(), PAGE_WAIT).toBe(3);

  await page.getByLabel("Aggregation").selectOption("weekly");
  await page.getByRole("button", { name: "Show usage" }).click();
  const weekly = await chartFor("aggregation=weekly");
  expect(weekly.stride).toEqual({ days: 7, hours: 0 });
  expect(weekly.buckets).toEqual(["2026-02-23T00:00:00.000Z", "2026-03-02T00:00:00.000Z"]);
  expect(weekly.data.slice(1)).toEqual([
    [2, 1],
    [0, 1],
  ]);

  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: "Export CSV" }).click(),
  ]);
  expect(download.suggestedFilename()).toBe("granular-usage-20260301T000000Z-20260308T000000Z.csv");
  const csv = (await readFile(await download.path(), "utf8")).trim().split("\r\n");
  expect(csv[0]).toBe(
    "Time Bucket Start,Time Bucket End,Workspace ID,Workspace Name,Project ID,Project Name,User ID,User Email,API Key Short Key,Traces",
  );
  expect(csv.slice(1).map((line) => [line.split(",")[0], line.split(",")[5], line.split(",")[9]])).toEqual([
    ["2026-02-23T00:00:00Z", "alpha", "2"],
    ["2026-03-02T00:00:00Z", "alpha", "1"],
    ["2026-03-02T00:00:00Z", "beta", "1"],
  ]);
  expect(pageErrors).toEqual([]);
});

it("says what is wrong instead of drawing when the key is refused", async () => {
  await page.goto(`${t.baseUrl}/settings/billing/usage`);
  await page.getByLabel("API key").fill("not-a-key");
  await page.getByRole("button", { name: "Use key" }).click();
  await expect.poll(() => page.getByRole("status").textContent(), PAGE_WAIT).toMatch(/^401: invalid API key/);
});
