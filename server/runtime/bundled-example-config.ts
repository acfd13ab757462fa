import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import type { GraphConfig } from "./graph-config.js";

/**
 * The graph config served when there is no config file: the bundled example agent as graph
 * `agent`, the same id the LangGraph templates use, so SDK snippets from their docs work as is.
 */
export function exampleGraphConfig(): GraphConfig {
  const self = fileURLToPath(import.meta.url);
  // Same extension as this module: .ts when tsx runs the sources, .js if they are ever compiled.
  const file = fileURLToPath(new URL(`../../examples/agent-graph${extname(self)}`, import.meta.url));
  return {
    file: undefined,
    graphs: [
      {
        graphId: "agent",
        file,
        exportName: "graph",
        description: "agentplane's example: a tool-calling agent on a scripted model (no LLM key needed)",
      },
    ],
    env: {},
    store: {},
    checkpointer: {},
    http: {},
    warnings: [],
  };
}
