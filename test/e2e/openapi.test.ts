/**
 * `GET /openapi.json` and the `/docs` page: the document is valid OpenAPI (checked by an independent
 * validator from npm), lists every REST route the server serves (RPC bindings and REST-only
 * routes, enumerated from the descriptors and the adapter list, not from a copy), and what it says
 * about answers holds for real answers; the page renders it in Chromium under its strict policy.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OUT_OF_SCOPE_ROUTES } from "../../server/transport/out-of-scope-adapter.js";
import { launchTestBrowser, SCREENSHOT_DIR, type TestBrowser } from "../support/chromium.js";
import { adapterRoutes, rpcRoutes } from "../support/hostile-input/api-routes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

interface OpenApiDocument {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
}
interface Operation {
  operationId: string;
  tags?: string[];
  description?: string;
  parameters?: { name?: string; in?: string; $ref?: string }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { $ref?: string; content?: Record<string, { schema: unknown }> }>;
  security?: unknown[];
}

/** How long the docs page may take to fetch the document and draw it on a loaded machine. */
const PAGE_WAIT = { timeout: 20_000 };

let t: TestApp;
let doc: OpenApiDocument;
let browser: TestBrowser | undefined;

beforeAll(async () => {
  t = await startTestApp();
  const response = await fetch(`${t.baseUrl}/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/json");
  doc = (await response.json()) as OpenApiDocument;
});

it("answers HEAD for the document and the page, without a body", async () => {
  for (const path of ["/openapi.json", "/docs"]) {
    const head = await fetch(`${t.baseUrl}${path}`, { method: "HEAD" });
    expect(head.status, path).toBe(200);
    expect(Number(head.headers.get("content-length")), path).toBeGreaterThan(0);
    expect(await head.text(), path).toBe("");
  }
});

afterAll(async () => {
  await browser?.close();
  await t?.stop();
});

/** Scrolls half a screen down and waits for the next frames; false when already at the bottom. */
function scrollDown(page: Page): Promise<boolean> {
  return page.evaluate(async () => {
    const before = window.scrollY;
    window.scrollBy(0, window.innerHeight / 2);
    // Two frames: the virtualizer hears the scroll, then React draws the rows now in view.
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    return window.scrollY !== before;
  });
}

/**
 * Scrolls the page from top to bottom in half-screen steps, adding to `drawn` every operation Swagger
 * UI has in the DOM on the way ("GET /path"). Swagger UI 5 virtualizes the operations list once it
 * holds 150 tags and operations or more (a fixed threshold, not an option): only the rows near the
 * viewport exist, and scrolling draws the others.
 */
async function sweepOperations(page: Page, drawn: Set<string>): Promise<void> {
  await page.evaluate(() => window.scrollTo(0, 0));
  for (;;) {
    const rows = await page.$$eval(".opblock", (blocks) =>
      blocks.map(
        (block) =>
          `${block.querySelector(".opblock-summary-method")?.textContent} ${block.querySelector(".opblock-summary-path")?.getAttribute("data-path")}`,
      ),
    );
    for (const row of rows) drawn.add(row);
    if (!(await scrollDown(page))) return;
  }
}

/** `/threads/{thread_id=*}` and `/x/{a=b/*}` → `/threads/{thread_id}`, `/x/{a}`. */
function openApiPath(template: string): string {
  return template.replace(/\{([^}=]+)(=[^}]*)?\}/g, "{$1}");
}

describe("the document", () => {
  it("is valid OpenAPI 3.1", async () => {
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
  });

  it("lists every REST binding of every RPC, with its path parameters", async () => {
    const routes = await rpcRoutes();
    expect(routes.length).toBeGreaterThan(50);
    const missing: string[] = [];
    for (const route of routes) {
      const operation = doc.paths[openApiPath(route.template.text)]?.[route.httpMethod.toLowerCase()];
      if (!operation) {
        missing.push(`${route.httpMethod} ${route.template.text}`);
        continue;
      }
      const inPath = (operation.parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
      expect(inPath, route.template.text).toEqual(route.pathBindings.map((b) => b.variable.fieldPath));
    }
    expect(missing).toEqual([]);
  });

  it("lists every REST-only route (trace ingest, CSV export, pages, the docs themselves)", () => {
    const missing = [
      ...adapterRoutes().filter(({ path }) => !OUT_OF_SCOPE_ROUTES.some((route) => route.path === path)),
      { method: "POST", path: "/internal/heapdump" },
      { method: "GET", path: "/internal/log-level" },
      { method: "PUT", path: "/internal/log-level" },
      { method: "GET", path: "/openapi.json" },
      { method: "GET", path: "/docs" },
    ]
      .filter(({ method }) => method !== "HEAD")
      .filter(({ method, path }) => !doc.paths[path]?.[method.toLowerCase()])
      .map(({ method, path }) => `${method} ${path}`);
    expect(missing).toEqual([]);
    const multipart = doc.paths["/api/v1/runs/multipart"]!.post!;
    expect(Object.keys(multipart.requestBody!.content)).toEqual(["multipart/form-data"]);
    expect(multipart.responses["202"]).toBeDefined();
    const csv = doc.paths["/api/v1/orgs/current/billing/granular-usage/export"]!.get!;
    expect(Object.keys(csv.responses["200"]!.content!)).toEqual(["text/csv"]);
    expect((csv.parameters ?? []).map((p) => p.name)).toEqual(
      expect.arrayContaining(["start_time", "end_time", "workspace_ids", "group_by"]),
    );
  });

  it("describes query parameters, bodies, streams, errors and who needs a key", () => {
    const history = doc.paths["/threads/{thread_id}/history"]!;
    expect(history.get!.parameters!.filter((p) => p.in === "query").map((p) => p.name)).toContain("limit");
    expect(history.post!.requestBody!.content["application/json"]).toBeDefined();
    const stream = doc.paths["/threads/{thread_id}/runs/stream"]!.post!;
    expect(Object.keys(stream.responses["200"]!.content!)).toEqual(["text/event-stream"]);
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        expect(operation.responses["4XX"], `${method} ${path}`).toEqual({
          $ref: "#/components/responses/Error",
        });
      }
    }
    expect(doc.paths["/ok"]!.get!.security).toEqual([]);
    expect(doc.paths["/ok"]!.get!.description).toMatch(/^Liveness and readiness\./);
    const checkDb = doc.paths["/ok"]!.get!.parameters!.find((p) => p.name === "check_db") as {
      description?: string;
    };
    expect(checkDb.description).toContain("run a query on Postgres");
    expect(doc.paths["/api/v1/workspaces"]!.get!.security).toBeUndefined();
  });

  it("describes answers as the server really writes them", async () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    // The whole document under one id, so the schemas' own `#/components/...` references resolve.
    ajv.addSchema(doc, "doc");
    const pointerPart = (part: string) => part.replaceAll("~", "~0").replaceAll("/", "~1");
    const check = async (path: string, method: string, response: Response) => {
      const pointer = ["paths", path, method, "responses", "200", "content", "application/json", "schema"];
      const validate = ajv.compile({ $ref: `doc#/${pointer.map(pointerPart).join("/")}` });
      const body = await response.json();
      expect(validate(body), `${method} ${path}: ${JSON.stringify(validate.errors)}`).toBe(true);
    };
    await t.fetch("/assistants", {
      method: "POST",
      body: JSON.stringify({ graph_id: "agent", name: "docs" }),
    });
    await check("/api/v1/workspaces", "get", await t.fetch("/api/v1/workspaces"));
    await check("/api/v1/whoami", "get", await t.fetch("/api/v1/whoami"));
    await check(
      "/assistants/search",
      "post",
      await t.fetch("/assistants/search", { method: "POST", body: "{}" }),
    );
    await check("/info", "get", await t.fetch("/info"));
    const refused = await t.fetch("/api/v1/workspaces", { apiKey: "not-a-key" });
    expect(refused.status).toBe(401);
    const error = ajv.compile({ $ref: "doc#/components/schemas/ErrorDetail" });
    expect(error(await refused.json())).toBe(true);
  });
});

describe("the /docs page", () => {
  it("renders every operation with Swagger UI from this server, under a policy without inline script", async () => {
    const response = await fetch(`${t.baseUrl}/docs`);
    expect(response.status).toBe(200);
    const policy = response.headers.get("content-security-policy") ?? "";
    expect(policy).toContain("script-src 'self';");
    expect(policy).not.toMatch(/script-src[^;]*(unsafe|https?:)/);
    expect(await response.text()).not.toMatch(/<script>|<script [^>]*>[^<]/);

    browser = await launchTestBrowser();
    const { page } = browser;
    const foreign: string[] = [];
    page.on("request", (request) => {
      if (!request.url().startsWith(t.baseUrl) && !request.url().startsWith("data:"))
        foreign.push(request.url());
    });
    await page.goto(`${t.baseUrl}/docs`);
    await expect.poll(() => page.locator(".info .title").textContent(), PAGE_WAIT).toContain("agentplane");
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations.length).toBeGreaterThan(100);
    // Sweeps until every operation has been drawn: a row missed on a slow frame is drawn on the next sweep.
    const drawn = new Set<string>();
    await expect
      .poll(async () => {
        await sweepOperations(page, drawn);
        return operations.filter((operation) => !drawn.has(operation));
      }, PAGE_WAIT)
      .toEqual([]);
    expect([...drawn].filter((operation) => !operations.includes(operation))).toEqual([]);
    // A deep link reaches an operation far down the (virtualized) list and opens it, which draws its
    // parameters, body schema and responses (the most styled parts).
    const { tags, operationId } = doc.paths["/threads/{thread_id}/history"]!.get!;
    await page.goto("about:blank");
    await page.goto(`${t.baseUrl}/docs#/${encodeURIComponent(tags![0]!)}/${encodeURIComponent(operationId)}`);
    const history = page.locator(".opblock-get", {
      has: page.locator('[data-path="/threads/{thread_id}/history"]'),
    });
    await expect.poll(() => history.locator("tr[data-param-name='limit']").count(), PAGE_WAIT).toBe(1);
    await mkdir(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: join(SCREENSHOT_DIR, "docs-page.png") });
    expect(foreign).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });
});
