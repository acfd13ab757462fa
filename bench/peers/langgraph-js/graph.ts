/**
 * The JS reference server's graph for `npm run bench:agent-crud`: one node. The CRUD bench runs no
 * graph; the server needs one to start, and it registers the graph's system assistant.
 */
import { Annotation, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ reply: Annotation<string> });

/** One node that answers "ok". */
export const graph = new StateGraph(State)
  .addNode("answer", () => ({ reply: "ok" }))
  .addEdge("__start__", "answer")
  .compile();
