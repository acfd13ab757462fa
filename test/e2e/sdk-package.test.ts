/**
 * The SDK as a user gets it: `npm pack` of sdk/ (its prepack builds JavaScript and type declarations
 * with the generated code inside), installed into a scratch project outside the repository, then
 * used from plain Node (ESM), type-checked by tsc as a consumer would, and bundled with esbuild for a
 * browser page in Chromium. Every code sample of sdk/README.md and of the project README's SDK
 * section runs here, in Node and in Chromium, against a real server (test/support/doc-samples.ts).
 *
 * The scratch install is offline: the SDK's three dependencies are packed from the repository's own
 * node_modules (the same pinned versions npm would fetch), so the test needs no network.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { build } from "esbuild";
import { afterAll, beforeAll, expect, it } from "vitest";
import { launchTestBrowser, type TestBrowser } from "../support/chromium.js";
import {
  CHECK_HARNESS,
  type DocSample,
  docSamples,
  runnableSample,
  runSamplesInNode,
  type SampleResult,
  sampleProblems,
} from "../support/doc-samples.js";
import { type DroppingProxy, startDroppingProxy } from "../support/dropping-proxy.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SDK_DIR = join(ROOT, "sdk");
/** The graphs the samples use: the example `agent` that `npm start` serves, and `ticker`. */
const GRAPHS = fileURLToPath(new URL("./fixtures/sdk-graphs/langgraph.json", import.meta.url));
/** The SDK's dependencies, packed from the root's node_modules for the offline install. */
const SDK_DEPENDENCIES = ["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-web"];
/**
 * Building and installing runs npm and tsc as child processes on a shared 2-core machine; the
 * default hook timeout is enough on an idle one, not under load.
 */
const SETUP_TIMEOUT_MS = 180_000;
/** tsc checks the consumer against every declaration file: seconds when idle, more under load. */
const TYPECHECK_TIMEOUT_MS = 120_000;
/** Every sample in turn, each a Node process or a bundle: seconds, more under load. */
const SAMPLES_TIMEOUT_MS = 120_000;
/** How long a browser page may take to load its bundles and run them. */
const PAGE_WAIT = { timeout: 60_000 };

let t: TestApp;
let proxy: DroppingProxy;
let scratch: string;
let app: string;
let packed: string[];
let workspaceName: string;
let browser: TestBrowser | undefined;
let samples: DocSample[];

beforeAll(async () => {
  t = await startTestApp({ graphConfigPath: GRAPHS });
  proxy = await startDroppingProxy(t.baseUrl);
  workspaceName = (await t.client().iam.identity.whoami({})).workspace?.displayName ?? "";
  samples = [
    ...docSamples(await readFile(join(SDK_DIR, "README.md"), "utf8"), "sdk/README.md"),
    ...docSamples(await readFile(join(ROOT, "README.md"), "utf8"), "README.md", "The TypeScript SDK"),
  ];
  scratch = await mkdtemp(join(tmpdir(), "agentplane-sdk-consumer-"));
  const tarballs = join(scratch, "tarballs");
  await mkdir(tarballs);
  // The SDK's prepack script builds it; --json names the tarball whatever npm prints besides.
  const sdk = await npm(SDK_DIR, ["pack", "--json", "--pack-destination", tarballs]);
  const deps = await npm(ROOT, [
    "pack",
    "--json",
    "--pack-destination",
    tarballs,
    ...SDK_DEPENDENCIES.map((name) => join(ROOT, "node_modules", name)),
  ]);
  packed = (JSON.parse(sdk) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
  app = join(scratch, "app");
  await mkdir(app);
  await writeFile(
    join(app, "package.json"),
    JSON.stringify({ name: "sdk-consumer", private: true, type: "module" }),
  );
  const files = [...JSON.parse(sdk), ...JSON.parse(deps)].map((p: { filename: string }) =>
    join(tarballs, p.filename),
  );
  await npm(app, ["install", "--offline", "--no-audit", "--no-fund", "--no-package-lock", ...files]);
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
  await proxy?.close();
  await t?.stop();
});

async function npm(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run("npm", args, { cwd, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** The browser of the file, started on first use. */
async function page() {
  browser ??= await launchTestBrowser();
  return browser;
}

/**
 * Serves `files` (name → JavaScript) and an index page loading `entry` as a module under `origin`'s
 * `/<prefix>/`, from the browser itself, so that the bundles call the server same-origin as an
 * application hosted with it would; opens the page (with `hash`, which reaches only the page).
 */
async function openPage(
  origin: string,
  prefix: string,
  files: Record<string, string>,
  entry: string,
  hash = "",
) {
  const { page: tab } = await page();
  await tab.route(`${origin}/${prefix}/**`, (route) => {
    const name = new URL(route.request().url()).pathname.slice(prefix.length + 2);
    return name.endsWith(".js")
      ? route.fulfill({ contentType: "text/javascript", body: files[name] ?? "" })
      : route.fulfill({
          contentType: "text/html",
          body: `<!doctype html><title>sdk</title><script type="module" src="/${prefix}/${entry}"></script>`,
        });
  });
  await tab.goto(`${origin}/${prefix}/index.html${hash}`);
  return tab;
}

it("packs JavaScript, type declarations and the generated code, and no TypeScript source", () => {
  expect(packed).toContain("README.md");
  expect(packed).toContain("dist/sdk/index.js");
  expect(packed).toContain("dist/sdk/index.d.ts");
  expect(packed).toContain("dist/gen/sdk/services.js");
  expect(packed).toContain("dist/gen/agentplane/iam/v1/identity_service_pb.js");
  expect(packed).toContain("dist/gen/google/api/annotations_pb.js");
  expect(packed.filter((path) => path.startsWith("dist/sdk/codegen/"))).toEqual([]);
  expect(packed.filter((path) => path.endsWith(".ts") && !path.endsWith(".d.ts"))).toEqual([]);
});

it("works from plain Node ESM over Connect JSON, Connect binary and gRPC-Web", async () => {
  const script = join(app, "check.mjs");
  await writeFile(
    script,
    `import { Code, ConnectError, createClient } from "@agentplane/sdk";
const [baseUrl, apiKey] = process.argv.slice(2);
const names = [];
for (const protocol of ["connect", "connect-binary", "grpc-web"]) {
  const me = await createClient({ baseUrl, apiKey, protocol }).iam.identity.whoami();
  names.push(me.workspace.displayName);
}
let refused = "";
try {
  await createClient({ baseUrl, apiKey: "not-a-key" }).iam.identity.whoami();
} catch (error) {
  refused = error instanceof ConnectError && error.code === Code.Unauthenticated ? "unauthenticated" : String(error);
}
console.log(JSON.stringify({ names, refused }));
`,
  );
  const { stdout } = await run(process.execPath, [script, t.baseUrl, t.adminKey], { cwd: app });
  expect(JSON.parse(stdout)).toEqual({
    names: [workspaceName, workspaceName, workspaceName],
    refused: "unauthenticated",
  });
});

it(
  "gives a TypeScript consumer the types, for every sample of the documents too",
  async () => {
    await writeFile(
      join(app, "consumer.ts"),
      `import { type AgentplaneClient, createClient, type iamV1 } from "@agentplane/sdk";
const ap: AgentplaneClient = createClient({ baseUrl: "http://127.0.0.1:2024", protocol: "grpc-web" });
export async function names(): Promise<string[]> {
  const { workspaces } = await ap.iam.workspaces.listWorkspaces({});
  return workspaces.map((w: iamV1.Workspace) => w.displayName);
}
`,
    );
    // Calls that must not type-check: proof that the declarations are really read, down to the
    // fields the LangGraph API fixes.
    await writeFile(
      join(app, "wrong.ts"),
      `import { createClient } from "@agentplane/sdk";
const ap = createClient({ baseUrl: "x" });
await ap.iam.workspaces.createWorkspace({ display_nam: "typo" });
await ap.agents.runs.createRun({ assistantId: "agent", streamMode: ["valuez"] });
`,
    );
    expect(samples.length).toBeGreaterThanOrEqual(8);
    // The scratch project has no Node types, hence the one declaration the samples need.
    const sampleFiles = samples.map((_, i) => `sample-${i + 1}.ts`);
    await Promise.all(
      samples.map((sample, i) =>
        writeFile(
          join(app, sampleFiles[i]!),
          `declare const process: { env: Record<string, string | undefined> };\n${sample.code}export {};\n`,
        ),
      ),
    );
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const options = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext"];
    options.push("--target", "es2022", "--lib", "es2022,dom", "--pretty", "false");
    // One compiler run for all files (tsc takes seconds to start): only wrong.ts may be reported.
    const report = await run(process.execPath, [tsc, ...options, "consumer.ts", ...sampleFiles, "wrong.ts"], {
      cwd: app,
    }).then(
      () => "",
      (error: { stdout: string }) => error.stdout,
    );
    const errors = report.trim().split("\n");
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/^wrong\.ts\(3,.*'display_nam' does not exist/);
    expect(errors[1]).toMatch(/^wrong\.ts\(4,.*'"valuez"' is not assignable/);
  },
  TYPECHECK_TIMEOUT_MS,
);

it(
  "runs every sample of the documents in Node",
  async () => {
    const problems = await runSamplesInNode(samples, { dir: app, baseUrl: t.baseUrl, apiKey: t.adminKey });
    expect(problems).toEqual([]);
  },
  SAMPLES_TIMEOUT_MS,
);

it(
  "runs every sample of the documents in Chromium, from esbuild bundles",
  async () => {
    const files: Record<string, string> = {};
    for (const [i, sample] of samples.entries()) {
      const bundle = await build({
        stdin: { contents: runnableSample(sample, t.baseUrl), loader: "ts", resolveDir: app },
        absWorkingDir: app,
        bundle: true,
        platform: "browser",
        format: "esm",
        target: "es2022",
        define: { "process.env.AGENTPLANE_API_KEY": JSON.stringify(t.adminKey) },
        write: false,
      });
      const script = bundle.outputFiles[0]!.text;
      expect(script).not.toMatch(/from\s+"node:/);
      files[`sample-${i + 1}.js`] = script;
    }
    files["run.js"] = `${CHECK_HARNESS}
const results = [];
for (let i = 1; i <= ${samples.length}; i++) {
  globalThis.__checks = [];
  try {
    await import("./sample-" + i + ".js");
    results.push({ checks: globalThis.__checks });
  } catch (error) {
    results.push({ checks: globalThis.__checks, error: String(error?.stack ?? error) });
  }
}
window.__samples = results;
`;
    const tab = await openPage(t.baseUrl, "sdk-samples", files, "run.js");
    await tab.waitForFunction(
      () => (window as { __samples?: unknown }).__samples !== undefined,
      null,
      PAGE_WAIT,
    );
    const results = await tab.evaluate(() => (window as unknown as { __samples: SampleResult[] }).__samples);
    expect(samples.flatMap((sample, i) => sampleProblems(sample, results[i]))).toEqual([]);
    // Chromium logs each answer with an error status, which the error samples ask for on purpose;
    // anything else a page logs as an error, or throws, is a failure.
    const logged = (await page()).pageErrors.filter(
      (e) => !e.startsWith("Failed to load resource: the server"),
    );
    expect(logged).toEqual([]);
  },
  SAMPLES_TIMEOUT_MS,
);

it("resumes a streamed run in Chromium after its connection drops", async () => {
  await writeFile(
    join(app, "resume.mjs"),
    `import { createClient } from "@agentplane/sdk";
const reconnects = [];
const ap = createClient({
  baseUrl: location.origin,
  apiKey: new URLSearchParams(location.hash.slice(1)).get("key"),
  reconnect: { initialDelayMs: 20, onReconnect: (info) => reconnects.push(info.lastEventId) },
});
const collect = async (stream) => { const all = []; for await (const e of stream) all.push(e); return all; };
try {
  const thread = await ap.agents.threads.createThread();
  const events = await collect(ap.agents.runs.streamRun({
    threadId: thread.threadId,
    assistantId: "ticker",
    input: { ticks: 30, interval_ms: 40 },
    streamMode: ["custom", "values"],
  }));
  const runId = events[0].data.run_id;
  const replay = await collect(ap.agents.runs.joinRunStream({ threadId: thread.threadId, runId, lastEventId: "-1" }));
  window.__resume = { events, replay, reconnects };
} catch (error) {
  window.__resume = { error: String(error) };
}
`,
  );
  const bundle = await build({
    entryPoints: [join(app, "resume.mjs")],
    absWorkingDir: app,
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    write: false,
  });
  const cuts = proxy.cuts;
  // Past the answer's headers and a few events: the run goes on for over a second after the cut.
  void proxy.cutNext("/agentplane.agents.v1.RunService/StreamRun", 700);
  const tab = await openPage(
    proxy.baseUrl,
    "sdk-resume",
    { "resume.js": bundle.outputFiles[0]!.text },
    "resume.js",
    `#key=${encodeURIComponent(t.adminKey)}`,
  );
  await tab.waitForFunction(() => (window as { __resume?: unknown }).__resume !== undefined, null, PAGE_WAIT);
  const result = await tab.evaluate(
    () =>
      (
        window as unknown as {
          __resume: { events: { event: string }[]; replay: unknown[]; reconnects: string[] };
        }
      ).__resume,
  );
  expect(proxy.cuts - cuts).toBe(1);
  expect(result.reconnects).toHaveLength(1);
  expect(result.events).toEqual(result.replay);
  expect(result.events.filter((e) => e.event === "custom")).toHaveLength(30);
});
