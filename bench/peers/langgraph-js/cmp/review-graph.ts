/**
 * `review`: `ask` calls `interrupt()` for a human decision, which a later run supplies with
 * `command.resume`.
 */
import { Annotation, END, interrupt, START, StateGraph } from "@langchain/langgraph";

const ReviewState = Annotation.Root({ request: Annotation<string>, decision: Annotation<string> });

/** START → ask (interrupts with a question) → END. */
export const graph = new StateGraph(ReviewState)
  .addNode("ask", (state) => ({
    decision: String(interrupt({ question: `approve ${state.request}?` })),
  }))
  .addEdge(START, "ask")
  .addEdge("ask", END)
  .compile();
