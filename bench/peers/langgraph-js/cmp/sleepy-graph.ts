/**
 * `sleepy`: one node that waits `sleep_ms` (stopping early when the run is cancelled) and then
 * records the wait in `messages`, so long runs, cancels and multitask strategies have a run that is
 * still going when the test acts on it. With `mark`, it also puts an item under ["marks", mark] in
 * the store once it has slept: proof, seen from outside, that the run went on to the end.
 */
import { Annotation, END, type LangGraphRunnableConfig, START, StateGraph } from "@langchain/langgraph";

const SleepyState = Annotation.Root({
  sleep_ms: Annotation<number>,
  mark: Annotation<string>,
  messages: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

/** Resolves after `ms`, or rejects as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason ?? new Error("aborted"));
    });
  });
}

/** START → sleep → END. */
export const graph = new StateGraph(SleepyState)
  .addNode("sleep", async (state, config: LangGraphRunnableConfig) => {
    await sleep(state.sleep_ms ?? 0, config.signal);
    if (state.mark) await config.store?.put(["marks"], state.mark, { slept: state.sleep_ms ?? 0 });
    return { messages: [`slept ${state.sleep_ms ?? 0} ms`] };
  })
  .addEdge(START, "sleep")
  .addEdge("sleep", END)
  .compile();
