/**
 * The SDK as a user gets it: `npm pack` of sdk/ (its prepack builds JavaScript and type declarations
 * with the generated code inside), installed into a scratch project outside the repository, then
 * used from plain Node (ESM), type-checked by tsc as a consumer would, and bundled with esbuild for a
 * browser page in Chromium. Every call goes to a real server.
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
import { startTestApp, type TestApp } from "../support/test-app.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SDK_DIR = join(ROOT, "sdk");
/** The SDK's dependencies, packed from the root's node_modules for the offline install. */
const SDK_DEPENDENCIES = ["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-web"];
/**
 * Building and installing runs npm and tsc as child processes on a shared 2-core machine; the
 * default hook timeout is enough on an idle one, not under load.
 */
const SETUP_TIMEOUT_MS = 180_000;
/** tsc checks the consumer against every declaration file: seconds when idle, more under load. */
const TYPECHECK_TIMEOUT_MS = 120_000;
/** How long the browser page may take to load its bundle and answer. */
const PAGE_WAIT = { timeout: 15_000 };

let t: TestApp;
let scratch: string;
let packed: string[];
let workspaceName: string;
let browser: TestBrowser | undefined;

beforeAll(async () => {
  t = await startTestApp();
  workspaceName = (await t.client().iam.identity.whoami({})).workspace?.displayName ?? "";
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
  const app = join(scratch, "app");
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
  await t?.stop();
});

async function npm(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run("npm", args, { cwd, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

it("packs JavaScript, type declarations and the generated code, and no TypeScript source", () => {
  expect(packed).toContain("README.md");
  expect(packed).toContain("dist/sdk/index.js");
  expect(packed).toContain("dist/sdk/index.d.ts");
  expect(packed).toContain("dist/gen/agentplane/iam/v1/identity_service_pb.js");
  expect(packed).toContain("dist/gen/google/api/annotations_pb.js");
  expect(packed.filter((path) => path.endsWith(".ts") && !path.endsWith(".d.ts"))).toEqual([]);
});

it("works from plain Node ESM over Connect JSON, Connect binary and gRPC-Web", async () => {
  const script = join(scratch, "app", "check.mjs");
  await writeFile(
    script,
    `import { Code, ConnectError, createClient } from "@agentplane/sdk";
const [baseUrl, apiKey] = process.argv.slice(2);
const names = [];
for (const protocol of ["connect", "connect-binary", "grpc-web"]) {
  const me = await createClient({ baseUrl, apiKey, protocol }).identity.whoami({});
  names.push(me.workspace.displayName);
}
let refused = "";
try {
  await createClient({ baseUrl, apiKey: "not-a-key" }).identity.whoami({});
} catch (error) {
  refused = error instanceof ConnectError && error.code === Code.Unauthenticated ? "unauthenticated" : String(error);
}
console.log(JSON.stringify({ names, refused }));
`,
  );
  const { stdout } = await run(process.execPath, [script, t.baseUrl, t.adminKey], {
    cwd: join(scratch, "app"),
  });
  expect(JSON.parse(stdout)).toEqual({
    names: [workspaceName, workspaceName, workspaceName],
    refused: "unauthenticated",
  });
});

it(
  "gives a TypeScript consumer the types",
  async () => {
    const app = join(scratch, "app");
    await writeFile(
      join(app, "consumer.ts"),
      `import { type AgentplaneClient, createClient, type Workspace } from "@agentplane/sdk";
const ap: AgentplaneClient = createClient({ baseUrl: "http://127.0.0.1:2024", protocol: "grpc-web" });
export async function names(): Promise<string[]> {
  const { workspaces } = await ap.workspaces.listWorkspaces({});
  return workspaces.map((w: Workspace) => w.displayName);
}
`,
    );
    // A call with a misspelt field must not type-check: proof that the declarations are really read.
    await writeFile(
      join(app, "wrong.ts"),
      `import { createClient } from "@agentplane/sdk";
await createClient({ baseUrl: "x" }).workspaces.createWorkspace({ display_nam: "typo" });
`,
    );
    // The package README's example must compile against the package too (the scratch project has no
    // Node types, hence the one declaration it needs).
    const readme = await readFile(join(SDK_DIR, "README.md"), "utf8");
    const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    expect(example).toContain("createClient");
    await writeFile(
      join(app, "readme.ts"),
      `declare const process: { env: Record<string, string | undefined> };\n${example}export {};\n`,
    );
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const options = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext"];
    options.push("--target", "es2022", "--lib", "es2022,dom", "--pretty", "false");
    // One compiler run for all files (tsc takes seconds to start): only wrong.ts may be reported.
    const report = await run(process.execPath, [tsc, ...options, "consumer.ts", "readme.ts", "wrong.ts"], {
      cwd: app,
    }).then(
      () => "",
      (error: { stdout: string }) => error.stdout,
    );
    const errors = report.trim().split("\n");
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^wrong\.ts\(2,.*'display_nam' does not exist/);
  },
  TYPECHECK_TIMEOUT_MS,
);

it("runs in a browser from an esbuild bundle", async () => {
  const app = join(scratch, "app");
  await writeFile(
    join(app, "browser.mjs"),
    `import { createClient } from "@agentplane/sdk";
const params = new URLSearchParams(location.hash.slice(1));
const ap = createClient({ baseUrl: location.origin, apiKey: params.get("key"), protocol: "grpc-web" });
ap.identity.whoami({}).then(
  (me) => { window.__sdkResult = { name: me.workspace.displayName }; },
  (error) => { window.__sdkResult = { error: String(error) }; },
);
`,
  );
  const bundle = await build({
    entryPoints: [join(app, "browser.mjs")],
    absWorkingDir: app,
    bundle: true,
    platform: "browser",
    format: "iife",
    target: "es2022",
    write: false,
  });
  const script = bundle.outputFiles[0]!.text;
  expect(script).not.toMatch(/from\s+"node:/);

  browser = await launchTestBrowser();
  const { page } = browser;
  // The page and its script are served by the browser itself, at the server's origin, so that the
  // bundle calls the server same-origin as an application hosted with it would.
  await page.route(`${t.baseUrl}/sdk-check/**`, (route) =>
    route.request().url().endsWith(".js")
      ? route.fulfill({ contentType: "text/javascript", body: script })
      : route.fulfill({
          contentType: "text/html",
          body: '<!doctype html><title>sdk</title><script src="/sdk-check/bundle.js"></script>',
        }),
  );
  await page.goto(`${t.baseUrl}/sdk-check/index.html#key=${encodeURIComponent(t.adminKey)}`);
  await page.waitForFunction(
    () => (window as { __sdkResult?: unknown }).__sdkResult !== undefined,
    null,
    PAGE_WAIT,
  );
  const result = await page.evaluate(() => (window as unknown as { __sdkResult: unknown }).__sdkResult);
  expect(result).toEqual({ name: workspaceName });
  expect(browser.pageErrors).toEqual([]);
});
