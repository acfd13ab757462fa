/** `loop`: a node that routes back to itself forever, so a run hits its recursion limit. */
import { Annotation, START, StateGraph } from "@langchain/langgraph";

const LoopState = Annotation.Root({
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
});

/** START → again → again → … (never ends). */
export const graph = new StateGraph(LoopState)
  .addNode("again", () => ({ turns: 1 }))
  .addEdge(START, "again")
  .addEdge("again", "again")
  .compile();
