import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium, type Page } from "playwright-core";

/** Debian's chromium, which the browser tests drive (playwright-core downloads no browser). */
const CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * Where browser tests save screenshots for a person to look at: the repository's `tmp/` (ignored
 * by git), so that they survive the run.
 */
export const SCREENSHOT_DIR = fileURLToPath(new URL("../../tmp/test-output/", import.meta.url));

/** A headless Chromium with one page whose errors are collected. */
export interface TestBrowser {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Uncaught exceptions and console errors of the page, in order. */
  readonly pageErrors: string[];
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/** Starts a headless Chromium with a throw-away profile; downloads are accepted. */
export async function launchTestBrowser(): Promise<TestBrowser> {
  const userDataDir = await mkdtemp(join(tmpdir(), "agentplane-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
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
  const page = context.pages()[0] ?? (await context.newPage());
  const pageErrors: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") pageErrors.push(message.text());
  });
  return {
    context,
    page,
    pageErrors,
    close: async () => {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
