/**
 * `echo`: one node that reports what the run handed the graph: its `context`, the keys of its
 * `configurable` and the run and thread ids there, so tests can see config, context and headers arrive.
 */
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

const EchoState = Annotation.Root({
  context: Annotation<unknown>,
  configurable: Annotation<Record<string, unknown>>,
});

/** START → echo → END. */
export const graph = new StateGraph(EchoState)
  .addNode("echo", (_state, config: LangGraphRunnableConfig) => {
    const configurable: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(config.configurable ?? {}))
      if (typeof value === "string" || typeof value === "number" || typeof value === "boolean")
        configurable[key] = value;
    return { context: config.context ?? null, configurable };
  })
  .addEdge(START, "echo")
  .addEdge("echo", END)
  .compile();
