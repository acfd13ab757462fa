/**
 * `approval`: a chat graph that asks for a decision with `interrupt()` before it answers, and then
 * answers with the decision it was given (`command.resume`). The A2A tests answer it through A2A.
 */
import { AIMessage } from "@langchain/core/messages";
import { END, interrupt, MessagesZodState, START, StateGraph } from "@langchain/langgraph";

/** START → decide (interrupts with a question about the last message) → END. */
export const graph = new StateGraph(MessagesZodState)
  .addNode("decide", (state) => {
    const request = String(state.messages.at(-1)?.content ?? "");
    const decision: unknown = interrupt({ question: `approve "${request}"?` });
    const text = typeof decision === "string" ? decision : JSON.stringify(decision);
    return { messages: [new AIMessage(`decision: ${text}`)] };
  })
  .addEdge(START, "decide")
  .addEdge("decide", END)
  .compile();
