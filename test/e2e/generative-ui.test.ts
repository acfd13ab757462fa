/**
 * Generative UI against a real server started with test/e2e/fixtures/generative-ui: the HTML that
 * `POST /ui/{assistant_id}` answers (by graph id, by an assistant's UUID in the caller's workspace,
 * by a ui name that is no graph), its 401/404/400/422 answers, the public bundle files with their
 * content types and ETags, and a run of a graph that pushes UI messages with `typedUi`: they stream
 * as `custom` events and end up in the `ui` state channel, read through the official SDK.
 */
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemAssistantId } from "../../server/runtime/system-assistant-id.js";
import { UiBundleError } from "../../server/runtime/ui-bundler.js";
import { writeGraphFixture } from "../support/graph-fixture.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const CONFIG = fileURLToPath(new URL("./fixtures/generative-ui/langgraph.json", import.meta.url));

let t: TestApp;
let sdk: Client;

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: CONFIG });
  sdk = new Client({ apiUrl: t.baseUrl, apiKey: t.adminKey });
});

afterAll(async () => {
  await t?.stop();
});

/** `POST /ui/{ref}` as the SDK's `client["~ui"].getComponent` sends it. */
function postUi(ref: string, body: unknown, init: { apiKey?: string | null; tenantId?: string } = {}) {
  return t.fetch(`/ui/${encodeURIComponent(ref)}`, {
    method: "POST",
    headers: { accept: "text/html" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
}

async function detail(response: Response): Promise<string> {
  return ((await response.json()) as { detail: string }).detail;
}

/** The fragment the JS server answers for ui `name` and component `component`, on this server. */
function expectedHtml(name: string, component: string, global: string): string {
  return [
    `<link rel="stylesheet" href="${t.baseUrl}/ui/${name}/entrypoint.css" />`,
    `<script src="${t.baseUrl}/ui/${name}/entrypoint.js" onload='${global}.render("${component}", "{{shadowRootId}}")'></script>`,
  ].join("\n");
}

describe("POST /ui/{assistant_id}", () => {
  it("answers the stylesheet and script that render the component, by graph id", async () => {
    const response = await postUi("weather", { name: "weather" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(await response.text()).toBe(expectedHtml("weather", "weather", "__LGUI_weather"));
    // A newer client's member beside `name` is ignored (decision 14): the same fragment.
    const newer = await postUi("weather", { name: "weather", props: { city: "Paris" } });
    expect(newer.status).toBe(200);
    expect(await newer.text()).toBe(expectedHtml("weather", "weather", "__LGUI_weather"));
  });

  it("selects the UI of the assistant's graph by its UUID, in the caller's workspace only", async () => {
    const system = await postUi(systemAssistantId("weather"), { name: "loading" });
    expect(await system.text()).toBe(expectedHtml("weather", "loading", "__LGUI_weather"));

    const assistant = await sdk.assistants.create({ graphId: "weather", name: "forecaster" });
    const own = await postUi(assistant.assistant_id, { name: "weather" });
    expect(own.status).toBe(200);
    expect(await own.text()).toBe(expectedHtml("weather", "weather", "__LGUI_weather"));

    const other = await t.client().iam.workspaces.createWorkspace({ displayName: "Other team" });
    const elsewhere = await postUi(assistant.assistant_id, { name: "weather" }, { tenantId: other.id });
    expect(elsewhere.status).toBe(404);
    expect(await detail(elsewhere)).toContain(`assistant "${assistant.assistant_id}" not found`);
  });

  it("serves a ui entry that is no graph under its own name (LoadExternalComponent's namespace)", async () => {
    const response = await postUi("weather-cards", { name: "weather" });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(expectedHtml("weather-cards", "weather", "__LGUI_weather_cards"));
  });

  it("answers 404 for a graph without UI, an unknown name or assistant, and an unknown component", async () => {
    const plainGraph = await postUi("plain", { name: "weather" });
    expect(plainGraph.status).toBe(404);
    expect(await detail(plainGraph)).toBe(
      'graph "plain" has no generative UI: add it under "ui" in the graphs file (ui entries: weather, weather-cards)',
    );

    const plainAssistant = await sdk.assistants.create({ graphId: "plain" });
    const viaAssistant = await postUi(plainAssistant.assistant_id, { name: "weather" });
    expect(viaAssistant.status).toBe(404);
    expect(await detail(viaAssistant)).toContain('uses graph "plain", which has no generative UI');

    const unknown = await postUi("nowhere", { name: "weather" });
    expect(unknown.status).toBe(404);
    expect(await detail(unknown)).toContain('no assistant, graph or ui entry is named "nowhere"');

    const unknownUuid = await postUi("0196f5c4-9d7e-7c3a-8b1e-5d2f3a4b6c7d", { name: "weather" });
    expect(unknownUuid.status).toBe(404);

    const component = await postUi("weather", { name: "radar" });
    expect(component.status).toBe(404);
    expect(await detail(component)).toBe(
      'ui "weather" has no component "radar"; its components: weather, loading',
    );
  });

  it("answers 422 for a body that is not {name} and 400 for one that is not JSON", async () => {
    const cases: [unknown, string][] = [
      [[], "the body must be a JSON object"],
      [{}, '"name" is required'],
      [{ name: 7 }, '"name" is required'],
      [{ name: "" }, '"name" is required'],
      [{ name: "x".repeat(300) }, "at most 256"],
    ];
    for (const [body, message] of cases) {
      const response = await postUi("weather", body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(await detail(response)).toContain(message);
    }
    const empty = await t.fetch("/ui/weather", { method: "POST" });
    expect(empty.status).toBe(422);
    const broken = await postUi("weather", "{name:");
    expect(broken.status).toBe(400);
  });

  it("needs an API key, as every workspace route", async () => {
    const response = await postUi("weather", { name: "weather" }, { apiKey: null });
    expect(response.status).toBe(401);
  });

  it("names the scheme a proxy reports, and no scheme for a remote host without one", async () => {
    const viaProxy = await fetch(`${t.baseUrl}/ui/weather`, {
      method: "POST",
      headers: { "x-api-key": t.adminKey, "x-forwarded-proto": "https", "content-type": "application/json" },
      body: JSON.stringify({ name: "weather" }),
    });
    expect(await viaProxy.text()).toContain(
      `src="https://127.0.0.1:${t.app.address.port}/ui/weather/entrypoint.js"`,
    );

    const remote = await new Promise<string>((resolve, reject) => {
      const req = request(`${t.baseUrl}/ui/weather`, {
        method: "POST",
        headers: { host: "agents.example.com", "x-api-key": t.adminKey, "content-type": "application/json" },
      });
      req.on("response", (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve(text));
      });
      req.on("error", reject);
      req.end(JSON.stringify({ name: "weather" }));
    });
    expect(remote).toContain('src="//agents.example.com/ui/weather/entrypoint.js"');
  });
});

describe("GET /ui/{name}/{file}", () => {
  it("serves the script without an API key, with its type and an ETag that revalidates to 304", async () => {
    const response = await fetch(`${t.baseUrl}/ui/weather/entrypoint.js`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("public, no-cache");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    const script = await response.text();
    expect(script).toMatch(/^var __LGUI_weather = /);
    expect(script).toContain('Symbol.for("LGUI_REQUIRE")]("react")');
    expect(script).toContain("Weather in ");
    const etag = response.headers.get("etag");
    expect(etag).toMatch(/^"[\w-]+"$/);

    const again = await fetch(`${t.baseUrl}/ui/weather/entrypoint.js`, {
      headers: { "if-none-match": etag! },
    });
    expect(again.status).toBe(304);
    const head = await fetch(`${t.baseUrl}/ui/weather/entrypoint.js`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(Buffer.byteLength(script)));
  });

  it("serves the stylesheet the components import", async () => {
    const response = await fetch(`${t.baseUrl}/ui/weather/entrypoint.css`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(await response.text()).toContain(".weather-card");
  });

  it("answers 404 for unknown bundles and files, traversal included", async () => {
    for (const path of [
      "/ui/plain/entrypoint.js",
      "/ui/nowhere/entrypoint.js",
      "/ui/weather/ui.tsx",
      "/ui/weather/%2E%2E%2Flanggraph.json",
      "/ui/weather/..%2F..%2Fpackage.json",
    ]) {
      const response = await fetch(`${t.baseUrl}${path}`);
      expect(response.status, path).toBe(404);
    }
  });
});

describe("UI messages of a run", () => {
  it("stream as custom events and land in the ui state channel", async () => {
    const thread = await sdk.threads.create();
    const custom: Record<string, unknown>[] = [];
    let runId: string | undefined;
    for await (const part of sdk.runs.stream(thread.thread_id, "weather", {
      input: { messages: [{ type: "human", content: "Paris" }] },
      streamMode: ["custom", "values"],
    })) {
      if (part.event === "metadata") runId = (part.data as { run_id: string }).run_id;
      if (part.event === "custom") custom.push(part.data as Record<string, unknown>);
    }
    expect(custom.map((event) => [event.type, event.name])).toEqual([
      ["ui", "loading"],
      ["ui", "weather"],
      ["remove-ui", undefined],
    ]);
    const weather = custom[1]!;
    expect(weather.props).toEqual({ city: "Paris", temperature: 21 });
    expect((weather.metadata as { run_id: string }).run_id).toBe(runId);
    expect(custom[2]!.id).toBe(custom[0]!.id);

    const state = await sdk.threads.getState<{ ui: Record<string, unknown>[] }>(thread.thread_id);
    expect(state.values.ui).toEqual([weather]);
  });
});

describe("a second server on the same database", () => {
  it("serves the same UI for an assistant the first one created", async () => {
    const second = await startTestApp({ graphConfigPath: CONFIG, databaseUrl: t.databaseUrl });
    try {
      const assistant = await sdk.assistants.create({ graphId: "weather", name: "made on the first" });
      const response = await fetch(`${second.baseUrl}/ui/${assistant.assistant_id}`, {
        method: "POST",
        headers: { "x-api-key": t.adminKey, "content-type": "application/json" },
        body: JSON.stringify({ name: "weather" }),
      });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain(`src="${second.baseUrl}/ui/weather/entrypoint.js"`);
      const [first, other] = await Promise.all(
        [t.baseUrl, second.baseUrl].map(
          async (base) => (await fetch(`${base}/ui/weather/entrypoint.js`)).headers,
        ),
      );
      expect(other!.get("etag")).toBe(first!.get("etag"));
    } finally {
      await second.stop();
    }
  });
});

describe("start-up", () => {
  it("stops with esbuild's message and the file when a ui module does not bundle", async () => {
    const project = await writeGraphFixture(
      {
        "graph.ts": `export { plain as graph } from "${CONFIG.replace("langgraph.json", "weather-graph.ts")}";`,
        "ui.tsx": "export default { card: () => <div>unclosed };",
      },
      { graphs: { agent: "./graph.ts:graph" }, ui: { agent: "./ui.tsx" } },
    );
    try {
      const starting = startTestApp({ graphConfigPath: project.configFile, databaseUrl: t.databaseUrl });
      await expect(starting).rejects.toBeInstanceOf(UiBundleError);
      await expect(starting).rejects.toThrow(
        `generative UI "ui.agent" (${project.dir}/ui.tsx) does not bundle`,
      );
      await expect(starting).rejects.toThrow(
        /ERROR\] Unexpected end of file before a closing "div" tag\s+ui\.tsx:1:45/,
      );
    } finally {
      await project.remove();
    }
  });
});
