/**
 * Captures the JS reference server's answers to the scenarios of test/support/edge-scenarios.ts
 * (subgraph interrupts, debug and checkpoint streams, message streams, dynamic graphs, schemas,
 * the custom HTTP app, generative UI, custom auth) on the graphs of test/e2e/fixtures/edge-graphs,
 * into that folder's `js-server-answers.json`, which the edge tests compare agentplane's answers
 * with. CI never runs this: run it by hand after an upgrade of the LangChain packages
 * (`npx tsx bench/capture-js-edges.ts`), with the peer in bench/peers/langgraph-js on the versions
 * of the root's.
 *
 * The fixture is copied into the peer's folder, where its packages resolve, with `zod` linked to
 * the root's copy: the graphs then run on the same zod as in agentplane's tests (the peer's own
 * zod is another major version, which changes what zod schemas say about themselves).
 */
import { cp, mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { customAuth, type EdgeAnswers, edgeTarget, MAIN_SCENARIOS } from "../test/support/edge-scenarios.js";
import { ensureLangGraphJsInstalled, PEER_DIR, startLangGraphJs } from "./agent-crud/langgraph-js-peer.js";

const FIXTURE = "test/e2e/fixtures/edge-graphs";
const COPY = join(PEER_DIR, "edge-graphs");

async function versionOf(name: string): Promise<string> {
  const manifest = join(PEER_DIR, "node_modules", name, "package.json");
  return (JSON.parse(await readFile(manifest, "utf8")) as { version: string }).version;
}

/** Runs `work` against the JS server started on the copy's graphs file `configName`. */
async function withServer<T>(configName: string, work: (baseUrl: string) => Promise<T>): Promise<T> {
  const server = await startLangGraphJs(join(COPY, configName));
  try {
    return await work(`http://127.0.0.1:${server.port}`);
  } finally {
    await server.stop();
  }
}

await ensureLangGraphJsInstalled();
await rm(COPY, { recursive: true, force: true });
await cp(FIXTURE, COPY, { recursive: true, filter: (source) => !source.endsWith("js-server-answers.json") });
await mkdir(join(COPY, "node_modules"), { recursive: true });
await symlink(resolve("node_modules/zod"), join(COPY, "node_modules", "zod"), "dir");
const rootZod = (JSON.parse(await readFile("node_modules/zod/package.json", "utf8")) as { version: string })
  .version;
try {
  const main = await withServer("langgraph.json", async (baseUrl) => {
    const target = edgeTarget(baseUrl);
    const answers: Record<string, unknown> = {};
    for (const [name, scenario] of Object.entries(MAIN_SCENARIOS)) {
      answers[name] = await scenario(target);
      console.log(`captured ${name}`);
    }
    return answers as EdgeAnswers["main"];
  });
  const auth = await withServer("langgraph.auth.json", (baseUrl) => customAuth(edgeTarget(baseUrl)));
  const answers: EdgeAnswers = {
    captured_with: `@langchain/langgraph-cli ${await versionOf("@langchain/langgraph-cli")} dev (@langchain/langgraph-api ${await versionOf("@langchain/langgraph-api")}, @langchain/langgraph ${await versionOf("@langchain/langgraph")}) on this folder, its zod linked to the root's (${rootZod})`,
    main,
    auth,
  };
  await writeFile(join(FIXTURE, "js-server-answers.json"), `${JSON.stringify(answers)}\n`);
  console.log(`wrote ${FIXTURE}/js-server-answers.json`);
} finally {
  await rm(COPY, { recursive: true, force: true });
}
