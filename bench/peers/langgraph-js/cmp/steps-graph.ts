/**
 * `steps`: draft → publish over plain JSON state, for `interrupt_before`, state edits between
 * runs, `Command` update/goto and copy-then-run. `log` accumulates the nodes that ran.
 */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

const StepsState = Annotation.Root({
  topic: Annotation<string>,
  text: Annotation<string>,
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

/** START → draft → publish → END. */
export const graph = new StateGraph(StepsState)
  .addNode("draft", (state) => ({ text: `draft about ${state.topic}`, log: ["draft"] }))
  .addNode("publish", (state) => ({ text: `published: ${state.text}`, log: ["publish"] }))
  .addEdge(START, "draft")
  .addEdge("draft", "publish")
  .addEdge("publish", END)
  .compile();
