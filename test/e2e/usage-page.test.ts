/**
 * The Granular Usage web page in a real browser (Debian's chromium driven by playwright-core)
 * against a real server with seeded usage in two workspaces that both have a project "alpha":
 * controls, the key in use and forgetting it, chart data drawn as bars with whole-number ticks, the
 * table and the CSV download. A screenshot of the chart by project is saved for people to look at.
 */
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Page } from "playwright-core";
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { unconfined } from "../../server/store/tracing/workspace-scope.js";
import { recordTraceUsage } from "../../server/tracing/usage-recorder.js";
import { launchTestBrowser, SCREENSHOT_DIR, type TestBrowser } from "../support/chromium.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** What the page exposes for tests as `window.__usageChart`. */
interface UsageChart {
  buckets: string[];
  keys: string[];
  labels: string[];
  data: number[][];
  bucketSeconds: number;
  barSeconds: number;
  yTicks: number[];
  stride: { days: number; hours: number };
  unit: string;
  groupBy: string;
  query: string;
}

let t: TestApp;
let browser: TestBrowser;
let page: Page;
let workspaceName: string;
/** A second workspace, sorting after the default one, with a project also named "alpha". */
const OTHER_WORKSPACE = "Zeta lab";
/**
 * How long the page may take to show a result: a headless browser shares the 2 CI cores with the
 * server and the other test files, so vitest's default second for expect.poll is too tight.
 */
const PAGE_WAIT = { timeout: 5_000 };

beforeAll(async () => {
  t = await startTestApp();
  const me = await t.client().iam.identity.whoami({});
  const workspaceId = me.workspace?.id ?? "";
  workspaceName = me.workspace?.displayName ?? "";
  const other = await t.client().iam.workspaces.createWorkspace({ displayName: OTHER_WORKSPACE });
  const projects = { alpha: uuidv7(), beta: uuidv7(), otherAlpha: uuidv7() };
  const sql = postgres(t.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`insert into tracing_projects (id, workspace_id, name)
              values (${projects.alpha}, ${workspaceId}, 'alpha'), (${projects.beta}, ${workspaceId}, 'beta'),
                     (${projects.otherAlpha}, ${other.id}, 'alpha')`;
    // March 2026: the 1st is a Sunday, so its ISO week starts on Monday, February 23rd.
    const traces: [string, string, string][] = [
      [workspaceId, projects.alpha, "2026-03-01T08:00:00Z"],
      [workspaceId, projects.alpha, "2026-03-01T09:00:00Z"],
      [other.id, projects.otherAlpha, "2026-03-02T10:00:00Z"],
      [other.id, projects.otherAlpha, "2026-03-02T11:00:00Z"],
      [other.id, projects.otherAlpha, "2026-03-02T12:00:00Z"],
      [workspaceId, projects.beta, "2026-03-03T10:00:00Z"],
      [workspaceId, projects.alpha, "2026-03-07T23:30:00Z"],
    ];
    for (const [wsId, projectId, at] of traces) {
      await recordTraceUsage(unconfined(sql), {
        workspaceId: wsId,
        projectId,
        userId: me.user?.id ?? null,
        apiKeyId: me.apiKeyId,
        receivedAt: new Date(at),
      });
    }
  } finally {
    await sql.end();
  }

  browser = await launchTestBrowser();
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
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

/** Whether the element labelled `label` is shown. */
function shown(label: string): Promise<boolean> {
  return page.getByLabel(label, { exact: true }).isVisible();
}

/**
 * The colour drawn on the chart's canvas in the middle of series `series`'s bar of bucket `bucket`
 * (a bucket's bars are side by side, centred on its start),
 * at height `value`, and the colour of that series: equal when a bar is drawn there.
 */
async function barPixel(
  series: number,
  bucket: number,
  value: number,
): Promise<{ at: string; series: string }> {
  return page.evaluate(
    ({ s, b, v }) => {
      type Plot = {
        valToPos(value: number, scale: string, canvasPixels: boolean): number;
        ctx: CanvasRenderingContext2D;
        series: { fill: (u: unknown, i: number) => string }[];
      };
      const w = window as unknown as { __usagePlot: Plot; __usageChart: UsageChart };
      const u = w.__usagePlot;
      const c = w.__usageChart;
      const groupStart = c.data[0]![b]! - (c.keys.length * c.barSeconds) / 2;
      const x = Math.round(u.valToPos(groupStart + (s + 0.5) * c.barSeconds, "x", true));
      const y = Math.round(u.valToPos(v, "y", true));
      const [r, g, bl] = u.ctx.getImageData(x, y, 1, 1).data;
      const hex = (n: number | undefined) => (n ?? 0).toString(16).padStart(2, "0");
      return { at: `#${hex(r)}${hex(g)}${hex(bl)}`, series: u.series[s + 1]!.fill(u, s + 1) };
    },
    { s: series, b: bucket, v: value },
  );
}

it("shows which key is in use once it is accepted, and hides the Start and End of preset ranges", async () => {
  await page.goto(`${t.baseUrl}/settings/billing/usage`);
  await expect.poll(() => page.title(), PAGE_WAIT).toContain("Granular Usage");
  expect(await page.evaluate(() => typeof (window as { uPlot?: unknown }).uPlot)).toBe("function");
  expect(await page.locator("#key-status").isVisible()).toBe(false);

  expect(await shown("Start (UTC)")).toBe(false);
  expect(await shown("End (UTC)")).toBe(false);
  await page.getByLabel("Time range").selectOption("custom");
  expect(await shown("Start (UTC)")).toBe(true);
  expect(await shown("End (UTC)")).toBe(true);
  await page.getByLabel("Time range").selectOption("7d");
  expect(await shown("Start (UTC)")).toBe(false);
  expect(await shown("End (UTC)")).toBe(false);

  await page.getByLabel("API key").fill(t.adminKey);
  await page.getByRole("button", { name: "Use key" }).click();
  const inUse = page.getByRole("region", { name: "Key in use" });
  await expect.poll(() => inUse.isVisible(), PAGE_WAIT).toBe(true);
  const shortKey = (await t.client().iam.identity.whoami({})).apiKeyShortKey;
  expect(await inUse.textContent()).toContain(
    `${shortKey} · personal key of admin@example.com · kept until this tab closes`,
  );
  expect(await inUse.textContent()).not.toContain(t.adminKey);
  expect(await page.locator("#key-form").isVisible()).toBe(false);
  await expect
    .poll(() => page.getByRole("checkbox", { name: workspaceName }).isChecked(), PAGE_WAIT)
    .toBe(true);
  expect(await page.getByRole("checkbox", { name: OTHER_WORKSPACE }).isChecked()).toBe(true);
  await chartFor("start_time");
});

it("draws one series of bars per project and workspace, with whole-number ticks, and exports the CSV", async () => {
  await page.getByLabel("Time range").selectOption("custom");
  await page.getByLabel("Start (UTC)").fill("2026-03-01T00:00");
  await page.getByLabel("End (UTC)").fill("2026-03-08T00:00");
  await page.getByLabel("Group by").selectOption("project");
  await page.getByRole("button", { name: "Show usage" }).click();
  const daily = await chartFor("group_by=project");
  expect(daily.stride).toEqual({ days: 1, hours: 0 });
  expect(daily.buckets).toEqual([1, 2, 3, 4, 5, 6, 7].map((d) => `2026-03-0${d}T00:00:00.000Z`));
  expect(daily.labels).toEqual([
    `alpha (${workspaceName})`,
    `alpha (${OTHER_WORKSPACE})`,
    `beta (${workspaceName})`,
  ]);
  expect(daily.data.slice(1)).toEqual([
    [2, 0, 0, 0, 0, 0, 1],
    [0, 3, 0, 0, 0, 0, 0],
    [0, 0, 1, 0, 0, 0, 0],
  ]);
  expect(daily.data[0]?.[0]).toBe(Date.parse("2026-03-01T00:00:00Z") / 1000);
  expect(await page.locator("#chart canvas").count()).toBeGreaterThan(0);
  await expect.poll(() => page.locator(".u-legend .u-series").count(), PAGE_WAIT).toBe(4);
  expect(await page.locator(".u-legend").textContent()).toContain(`alpha (${OTHER_WORKSPACE})`);

  // Bars: a count's bar is filled from the axis up (a line would pass through its top only), and
  // nothing is drawn where the count is zero.
  for (const [series, bucket, value] of [
    [0, 0, 2],
    [1, 1, 3],
    [2, 2, 1],
    [0, 6, 1],
  ] as const) {
    const pixel = await barPixel(series, bucket, value / 4);
    expect(pixel.at, `series ${series}, bucket ${bucket}`).toBe(pixel.series);
  }
  const empty = await barPixel(1, 0, 0.5);
  expect(empty.at).not.toBe(empty.series);

  // Whole traces: every tick of the count axis is a whole number.
  const ticks = await page.evaluate(
    () => (window as unknown as { __usageChart: UsageChart }).__usageChart.yTicks,
  );
  expect(ticks.length).toBeGreaterThan(1);
  expect(ticks.every(Number.isInteger), ticks.join(", ")).toBe(true);
  expect(Math.max(...ticks)).toBeGreaterThanOrEqual(3);

  await expect.poll(() => page.locator("#usage-table tbody tr").count(), PAGE_WAIT).toBe(4);
  expect(await page.locator("#usage-table tbody tr td:nth-child(2)").allTextContents()).toEqual([
    `alpha (${workspaceName})`,
    `alpha (${OTHER_WORKSPACE})`,
    `beta (${workspaceName})`,
    `alpha (${workspaceName})`,
  ]);
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, "usage-page-projects.png"), fullPage: true });

  await page.getByLabel("Aggregation").selectOption("weekly");
  await page.getByRole("button", { name: "Show usage" }).click();
  const weekly = await chartFor("aggregation=weekly");
  expect(weekly.stride).toEqual({ days: 7, hours: 0 });
  expect(weekly.buckets).toEqual(["2026-02-23T00:00:00.000Z", "2026-03-02T00:00:00.000Z"]);
  expect(weekly.data.slice(1)).toEqual([
    [2, 1],
    [0, 3],
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
  const rows = csv.slice(1).map((line) => [line.split(",")[0], line.split(",")[5], line.split(",")[9]]);
  expect(rows.sort()).toEqual([
    ["2026-02-23T00:00:00Z", "alpha", "2"],
    ["2026-03-02T00:00:00Z", "alpha", "1"],
    ["2026-03-02T00:00:00Z", "alpha", "3"],
    ["2026-03-02T00:00:00Z", "beta", "1"],
  ]);
  expect(browser.pageErrors).toEqual([]);
});

it("forgets the key: gone from the page and from storage, asked for again after a reload", async () => {
  await page.getByRole("button", { name: "Forget key" }).click();
  expect(await page.locator("#key-form").isVisible()).toBe(true);
  expect(await page.locator("#key-status").isVisible()).toBe(false);
  expect(await page.getByRole("status").textContent()).toContain("forgotten");
  expect(await page.getByRole("checkbox").count()).toBe(1); // only "Remember on this device"
  expect(await page.locator("#chart canvas").count()).toBe(0);
  expect(await page.locator("#usage-table tbody tr").count()).toBe(0);
  const stored = () =>
    page.evaluate(() => [
      localStorage.length,
      sessionStorage.length,
      Object.keys(window).includes("__usageChart"),
    ]);
  expect(await stored()).toEqual([0, 0, true]);
  await page.reload();
  await expect
    .poll(() => page.getByRole("status").textContent(), PAGE_WAIT)
    .toBe("Enter an API key to see usage.");
  expect(await page.locator("#key-status").isVisible()).toBe(false);
});

it("remembers a key on this device when asked, until it is forgotten", async () => {
  await page.getByLabel("API key").fill(t.adminKey);
  await page.getByLabel("Remember on this device").check();
  await page.getByRole("button", { name: "Use key" }).click();
  const inUse = page.getByRole("region", { name: "Key in use" });
  await expect.poll(() => inUse.textContent(), PAGE_WAIT).toContain("remembered on this device");
  await page.reload();
  await expect.poll(() => inUse.isVisible(), PAGE_WAIT).toBe(true);
  await chartFor("start_time");
  await page.getByRole("button", { name: "Forget key" }).click();
  await page.reload();
  await expect
    .poll(() => page.getByRole("status").textContent(), PAGE_WAIT)
    .toBe("Enter an API key to see usage.");
  expect(browser.pageErrors).toEqual([]);
});

it("says what is wrong instead of drawing when the key is refused", async () => {
  await page.goto(`${t.baseUrl}/settings/billing/usage`);
  await page.getByLabel("API key").fill("not-a-key");
  await page.getByRole("button", { name: "Use key" }).click();
  await expect.poll(() => page.getByRole("status").textContent(), PAGE_WAIT).toMatch(/^401: invalid API key/);
  expect(await page.locator("#key-status").isVisible()).toBe(false);
  expect(await page.locator("#key-form").isVisible()).toBe(true);
});
