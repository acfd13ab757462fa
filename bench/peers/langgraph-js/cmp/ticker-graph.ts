/**
 * `ticker`: one node that writes `ticks` custom events `interval_ms` apart, so a stream has events
 * spread over time to drop and resume in the middle of.
 */
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

const TickerState = Annotation.Root({
  ticks: Annotation<number>,
  interval_ms: Annotation<number>,
  done: Annotation<number>,
});

/** START → tick (writes {tick: 0 … ticks-1}) → END. */
export const graph = new StateGraph(TickerState)
  .addNode("tick", async (state, config: LangGraphRunnableConfig) => {
    for (let tick = 0; tick < state.ticks; tick++) {
      config.writer?.({ tick });
      await new Promise((resolve) => setTimeout(resolve, state.interval_ms));
    }
    return { done: state.ticks };
  })
  .addEdge(START, "tick")
  .addEdge("tick", END)
  .compile();
