/**
 * The streaming protocol in a real browser (Debian's chromium, driven by playwright-core): a React
 * 19 chat page (test/e2e/fixtures/react-v2/app.tsx, bundled here with esbuild, served from another
 * origin that AGENTPLANE_CORS_ORIGINS allows) uses `useStream` of `@langchain/react` 1.1, over SSE
 * and over the WebSocket. It sends a message and shows the streamed answer, is reloaded in the
 * middle of an answer and shows it complete, and shows an interrupt that a click answers. The
 * SDK's own `@langchain/langgraph-sdk/react` `useStream` (the run streams) is reloaded mid-run too
 * and rejoins the run (`joinStream` with `checkpoint_id` and `cancel_on_disconnect=0`).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchTestBrowser, type TestBrowser } from "../support/chromium.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { ANSWER } from "./fixtures/protocol-graphs/chat-graph.js";

const PAGE = fileURLToPath(new URL("./fixtures/react-v2/app.tsx", import.meta.url));
const GRAPHS = "test/e2e/fixtures/protocol-graphs/langgraph.json";
/**
 * How long the page may take to show a result: a run and a render in a headless browser that
 * shares the 2 CI cores with the server and other test files.
 */
const PAGE_WAIT = { timeout: 20_000 };

let t: TestApp;
let browser: TestBrowser;
let pages: Server;
let pageOrigin: string;

beforeAll(async () => {
  const bundle = await build({
    entryPoints: [PAGE],
    bundle: true,
    write: false,
    platform: "browser",
    format: "iife",
    jsx: "automatic",
    target: "es2022",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
  });
  const script = bundle.outputFiles[0]?.text ?? "";
  let config = "";
  pages = createServer((req, res) => {
    if (req.url === "/app.js") {
      res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" });
      res.end(script);
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(
      `<!doctype html><title>chat</title><div id="root"></div><script>window.__APP__ = ${config};</script><script src="/app.js"></script>`,
    );
  });
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve));
  pageOrigin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  t = await startTestApp({ graphConfigPath: GRAPHS, corsOrigins: [pageOrigin] });
  config = JSON.stringify({ apiUrl: t.baseUrl, apiKey: t.adminKey });
  browser = await launchTestBrowser();
});

afterAll(async () => {
  await browser?.close();
  await t?.stop();
  await new Promise((resolve) => pages?.close(resolve));
});

/** The texts of the page's messages. */
const messageTexts = () => browser.page.locator("#messages li").allTextContents();

describe.each(["sse", "websocket"])("@langchain/react useStream over %s", (transport) => {
  it("sends a message and shows the streamed answer", async () => {
    const { page } = browser;
    await page.goto(`${pageOrigin}/?assistant=chat&transport=${transport}`);
    await page.evaluate(() => localStorage.clear());
    await page.reload();
    await page.locator("#send").click();
    await expect.poll(messageTexts, PAGE_WAIT).toEqual(["hi", ANSWER]);
    await expect.poll(() => page.locator("#status").textContent(), PAGE_WAIT).toBe("idle");
    expect(browser.pageErrors).toEqual([]);
  });

  it("reloaded in the middle of an answer, shows the answer complete", async () => {
    const { page } = browser;
    await page.goto(`${pageOrigin}/?assistant=slow_chat&delay=80&transport=${transport}`);
    await page.evaluate(() => localStorage.clear());
    await page.reload();
    await page.locator("#send").click();
    // Part of the answer is on the page: the run is in the middle of it.
    await expect.poll(async () => (await messageTexts())[1]?.length ?? 0, PAGE_WAIT).toBeGreaterThan(3);
    expect((await messageTexts())[1]).not.toBe(ANSWER);
    await page.reload();
    await expect.poll(messageTexts, PAGE_WAIT).toEqual(["hi", ANSWER]);
    await expect.poll(() => page.locator("#status").textContent(), PAGE_WAIT).toBe("idle");
    expect(browser.pageErrors).toEqual([]);
  });

  it("shows an interrupt, and the click that answers it resumes the run", async () => {
    const { page } = browser;
    await page.goto(`${pageOrigin}/?assistant=approval&transport=${transport}`);
    await page.evaluate(() => localStorage.clear());
    await page.reload();
    await page.locator("#send").click();
    await page.locator("#interrupt").waitFor(PAGE_WAIT);
    expect(await page.locator("#interrupt").textContent()).toContain("Ship it on Friday?");
    await page.locator("#approve").click();
    await expect.poll(async () => (await messageTexts()).at(-1), PAGE_WAIT).toBe("Decision: yes");
    await expect.poll(() => page.locator("#interrupt").count(), PAGE_WAIT).toBe(0);
    expect(browser.pageErrors).toEqual([]);
  });
});

describe("the SDK's own useStream (run streams)", () => {
  it("reloaded in the middle of an answer, rejoins the run and shows the answer complete", async () => {
    const { page } = browser;
    await page.goto(`${pageOrigin}/?assistant=slow_chat&delay=80&hook=legacy`);
    await page.evaluate(() => {
      localStorage.clear();
      sessionStorage.clear();
    });
    await page.reload();
    const joins: string[] = [];
    page.on("request", (request) => {
      if (/\/runs\/[^/]+\/stream/.test(request.url()) && request.method() === "GET")
        joins.push(request.url());
    });
    await page.locator("#send").click();
    await expect.poll(async () => (await messageTexts())[1]?.length ?? 0, PAGE_WAIT).toBeGreaterThan(3);
    await page.reload();
    await expect.poll(async () => (await messageTexts()).at(-1), PAGE_WAIT).toBe(ANSWER);
    // The reloaded page rejoined the run as SDK 1.15 does: with the checkpoint it shows.
    expect(joins.some((url) => url.includes("cancel_on_disconnect=0"))).toBe(true);
    expect(browser.pageErrors).toEqual([]);
  });
});
