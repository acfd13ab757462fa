import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../logger.js";
import { createStaticSchemaExtractor } from "./graph-static-schemas.js";

/** An Annotation graph of the e2e fixtures (its successful extraction is tested there). */
const TARGET = {
  graphId: "annotation",
  file: resolve("test/e2e/fixtures/schema-graphs/annotation-graph.ts"),
  exportName: "graph",
};

/** A JSON logger whose lines are kept, parsed. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger("info", (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  return { log, lines };
}

describe("createStaticSchemaExtractor", () => {
  it("gives up at the timeout: the graph has no schemas, the reason is logged once", async () => {
    const { log, lines } = capture();
    // Building the TypeScript program alone takes seconds, so 50 ms always times out.
    const extractor = createStaticSchemaExtractor({ timeoutMs: 50, log });
    const [first, concurrent] = await Promise.all([extractor.schemasOf(TARGET), extractor.schemasOf(TARGET)]);
    expect(first).toBeUndefined();
    expect(concurrent).toBeUndefined();
    expect(await extractor.schemasOf(TARGET)).toBeUndefined();
    expect(lines).toEqual([
      expect.objectContaining({
        level: "warn",
        message: expect.stringMatching(
          /^the schemas of graph "annotation" cannot be derived from its TypeScript types, so it serves without them: it took longer than 50 ms \(LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS\)/,
        ),
        graph_id: "annotation",
        export: "graph",
      }),
    ]);
    await extractor.close();
  });

  it("stops an extraction in progress when closed, and answers nothing afterwards", async () => {
    const { log, lines } = capture();
    const extractor = createStaticSchemaExtractor({ timeoutMs: 60_000, log });
    const pending = extractor.schemasOf(TARGET);
    // One turn of the event loop: the queued extraction has started its worker.
    await new Promise((resolve) => setImmediate(resolve));
    await extractor.close();
    expect(await pending).toBeUndefined();
    expect(await extractor.schemasOf({ ...TARGET, graphId: "other" })).toBeUndefined();
    // Stopping is not the graphs' fault: nothing is logged.
    expect(lines).toEqual([]);
  });
});
