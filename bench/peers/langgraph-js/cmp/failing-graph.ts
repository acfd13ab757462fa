/** `failing`: a node that throws an error of its own class, for the `error` event and run status. */
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

/** The error the node throws; its name is what the `error` event reports. */
class CustomError extends Error {
  override name = "CustomError";
}

/** START → explode (throws) → END. */
export const graph = new StateGraph(Annotation.Root({ value: Annotation<string> }))
  .addNode("explode", (): { value: string } => {
    throw new CustomError("Boo!");
  })
  .addEdge(START, "explode")
  .addEdge("explode", END)
  .compile();
