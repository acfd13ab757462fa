/**
 * `factory`: the export is a function of the run's config, as LangGraph servers allow; the graph
 * it builds answers with the `configurable.persona` it was made for.
 */
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

const FactoryState = Annotation.Root({ greeting: Annotation<string> });

/** Builds START → greet → END for the persona in `config.configurable.persona`. */
export function graph(config: LangGraphRunnableConfig) {
  const persona = String(config.configurable?.persona ?? "nobody");
  return new StateGraph(FactoryState)
    .addNode("greet", () => ({ greeting: `hello from ${persona}` }))
    .addEdge(START, "greet")
    .addEdge("greet", END)
    .compile();
}
