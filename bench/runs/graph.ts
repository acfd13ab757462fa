/**
 * The graph of `npm run bench:runs`, served by agentplane and by the JS reference server alike: one
 * node that answers "ok", so a run's cost is the server's (queue, checkpoints, stream), not the graph's.
 */
import { Annotation, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ reply: Annotation<string> });

/** START → answer → END. */
export const graph = new StateGraph(State)
  .addNode("answer", () => ({ reply: "ok" }))
  .addEdge("__start__", "answer")
  .compile();
