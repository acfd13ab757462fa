/**
 * The LangGraph SDK samples of the documents, run as a user runs them: each sample that imports
 * `@langchain/langgraph-sdk` (in docs/agent-server.md and in the README's "LangGraph SDK" section)
 * is a Node ESM program of its own, against a real server serving the example graph that
 * `npm start` serves, with `AGENTPLANE_API_KEY` set to an admin key. A sample passes when it ends
 * without an error and every `// →` line printed what the document says (test/support/doc-samples.ts).
 * Our own SDK's samples run in sdk-package.test.ts, from its packed tarball.
 */
import { mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type DocSample, docSamples, runSamplesInNode } from "../support/doc-samples.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Every sample in turn, each a Node process running a graph: seconds, more under load. */
const SAMPLES_TIMEOUT_MS = 120_000;
/** The client whose samples run here; the documents' other blocks are configuration or sketches. */
const LANGGRAPH_SDK_IMPORT = /from "@langchain\/langgraph-sdk"/;

let t: TestApp;
let scratch: string;
let samples: DocSample[];

async function documentSamples(file: string, section?: string): Promise<DocSample[]> {
  const markdown = await readFile(join(ROOT, file), "utf8");
  return docSamples(markdown, file, section).filter((s) => LANGGRAPH_SDK_IMPORT.test(s.code));
}

beforeAll(async () => {
  t = await startTestApp();
  samples = [
    ...(await documentSamples("README.md", "LangGraph SDK (`@langchain/langgraph-sdk`)")),
    ...(await documentSamples("docs/agent-server.md")),
  ];
  // Outside the repository, resolving packages as a project that installed them would.
  scratch = await mkdtemp(join(tmpdir(), "agentplane-doc-samples-"));
  await symlink(join(ROOT, "node_modules"), join(scratch, "node_modules"), "dir");
  await writeFile(join(scratch, "package.json"), JSON.stringify({ private: true, type: "module" }));
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
  await t?.stop();
});

it(
  "runs every LangGraph SDK sample of the README and docs/agent-server.md in Node",
  async () => {
    // The README's sample and the two of docs/agent-server.md: a document that lost its samples fails.
    expect(samples.map((s) => s.name)).toEqual([
      "README.md sample 1",
      "docs/agent-server.md sample 1",
      "docs/agent-server.md sample 2",
    ]);
    const problems = await runSamplesInNode(samples, {
      dir: scratch,
      baseUrl: t.baseUrl,
      apiKey: t.adminKey,
    });
    expect(problems).toEqual([]);
  },
  SAMPLES_TIMEOUT_MS,
);
