/**
 * Captures the JS reference server's `/schemas` and `/subgraphs?recurse=true` answers for the graphs
 * of `test/e2e/fixtures/schema-graphs` into that folder's `js-server-answers.json`, which
 * `test/e2e/graph-schemas.test.ts` compares agentplane's answers with. CI never runs this: run it by
 * hand after an upgrade of the LangChain packages (`npx tsx bench/capture-js-schemas.ts`), with the
 * peer in `bench/peers/langgraph-js` on the same versions as the root's.
 */
import { cp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensureLangGraphJsInstalled, PEER_DIR, startLangGraphJs } from "./agent-crud/langgraph-js-peer.js";

const FIXTURE = "test/e2e/fixtures/schema-graphs";
/** The fixture is copied into the peer's folder (gitignored there), where its packages resolve. */
const COPY = join(PEER_DIR, "schema-graphs");
/** Reading an Annotation graph's types takes the JS server several seconds per graph. */
const CALL_TIMEOUT_MS = 180_000;

async function getJson(port: number, path: string): Promise<unknown> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

await ensureLangGraphJsInstalled();
await rm(COPY, { recursive: true, force: true });
await cp(FIXTURE, COPY, { recursive: true, filter: (source) => !source.endsWith("js-server-answers.json") });
const config = JSON.parse(await readFile(join(FIXTURE, "langgraph.json"), "utf8")) as {
  graphs: Record<string, string>;
};
const cli = JSON.parse(
  await readFile(join(PEER_DIR, "node_modules/@langchain/langgraph-cli/package.json"), "utf8"),
) as { version: string };
const api = JSON.parse(
  await readFile(join(PEER_DIR, "node_modules/@langchain/langgraph-api/package.json"), "utf8"),
) as { version: string };
const server = await startLangGraphJs(join(COPY, "langgraph.json"));
try {
  const graphs: Record<string, { schemas: unknown; subgraphs: unknown }> = {};
  // The logging graph only checks that graph modules may log at load; it has no schemas to compare.
  for (const graph of Object.keys(config.graphs).filter((id) => id !== "logging")) {
    graphs[graph] = {
      schemas: await getJson(server.port, `/assistants/${graph}/schemas`),
      subgraphs: await getJson(server.port, `/assistants/${graph}/subgraphs?recurse=true`),
    };
  }
  const answers = {
    captured_with: `@langchain/langgraph-cli ${cli.version} dev (@langchain/langgraph-api ${api.version}) on this folder: GET /assistants/{graph}/schemas and GET /assistants/{graph}/subgraphs?recurse=true`,
    graphs,
  };
  await writeFile(join(FIXTURE, "js-server-answers.json"), `${JSON.stringify(answers)}\n`);
  console.log(`wrote ${FIXTURE}/js-server-answers.json (${Object.keys(graphs).length} graphs)`);
} finally {
  await server.stop();
  await rm(COPY, { recursive: true, force: true });
}
