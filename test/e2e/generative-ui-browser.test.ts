/**
 * Generative UI in a real browser (Debian's chromium driven by playwright-core): a React 19 chat
 * page (test/e2e/fixtures/generative-ui/app.tsx, bundled here with esbuild) served from another
 * origin uses `useStream` and `LoadExternalComponent` of the official SDK against the server. A run
 * of the `weather` graph pushes a UI message; the component's bundle is fetched from the server and
 * renders in a shadow root with the message's props, the page's React (state and events work) and
 * the server's stylesheet. A screenshot is saved for people to look at.
 */
import { mkdir } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchTestBrowser, SCREENSHOT_DIR, type TestBrowser } from "../support/chromium.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const FIXTURES = fileURLToPath(new URL("./fixtures/generative-ui/", import.meta.url));
/**
 * How long the page may take to show a result: a run, a component fetch and a render in a headless
 * browser that shares the 2 CI cores with the server and other test files.
 */
const PAGE_WAIT = { timeout: 20_000 };

let t: TestApp;
let browser: TestBrowser;
let pages: Server;
let pageOrigin: string;

beforeAll(async () => {
  const app = await build({
    entryPoints: [join(FIXTURES, "app.tsx")],
    bundle: true,
    write: false,
    platform: "browser",
    format: "iife",
    jsx: "automatic",
    target: "es2020",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
  });
  const script = app.outputFiles[0]!.text;
  let config = "";
  // The page comes from its own origin, as an app in front of agentplane would.
  pages = createServer((req, res) => {
    if (req.url === "/app.js") {
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" });
      res.end(script);
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(
      `<!doctype html><title>generative ui</title><div id="root"></div><script>window.__GENUI__ = ${config};</script><script src="/app.js"></script>`,
    );
  });
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve));
  pageOrigin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  t = await startTestApp({
    graphConfigPath: join(FIXTURES, "langgraph.json"),
    corsOrigins: [pageOrigin],
  });
  config = JSON.stringify({ apiUrl: t.baseUrl, apiKey: t.adminKey, assistantId: "weather" });
  browser = await launchTestBrowser();
});

afterAll(async () => {
  await browser?.close();
  await t?.stop();
  await new Promise((resolve) => pages?.close(resolve));
});

it("renders the graph's component with the UI message's props through LoadExternalComponent", async () => {
  const { page } = browser;
  await page.goto(`${pageOrigin}/`);
  await page.locator("#ask").click();

  // Locators pierce open shadow roots, where LoadExternalComponent mounts the component.
  const line = page.locator(".weather-line");
  await line.waitFor(PAGE_WAIT);
  expect(await line.textContent()).toBe("Weather in Paris: 21°C");
  await expect.poll(() => page.locator("#status").textContent(), PAGE_WAIT).toBe("idle");
  await expect
    .poll(() => page.locator(".weather-thread").textContent(), PAGE_WAIT)
    .toBe("messages in thread: 2");
  expect(await page.locator("#messages li").allTextContents()).toEqual(["Paris", "Forecast for Paris"]);
  // The removed `loading` message is gone: one component is left.
  expect(await page.locator(".weather-card").count()).toBe(1);

  // The component runs on the page's React: its state and event handlers work.
  await page.locator(".weather-card button").click();
  await expect
    .poll(() => page.locator(".weather-card button").textContent(), PAGE_WAIT)
    .toBe("details opened 1 times");
  // The stylesheet the server bundled applies inside the shadow root.
  const border = await page.locator(".weather-card").evaluate((el) => getComputedStyle(el).borderTopColor);
  expect(border).toBe("rgb(0, 128, 0)");

  await mkdir(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, "generative-ui.png") });
  expect(browser.pageErrors).toEqual([]);
});
