/**
 * `nested`: a parent graph whose `weather` node is a two-node subgraph, for `stream_subgraphs`
 * (events named `<mode>|weather:<task id>`). `nested_review` is the same graph with its subgraph
 * compiled to stop before `report`, for human review inside a subgraph.
 */
import { Annotation, END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";

const WeatherState = Annotation.Root({ ...MessagesAnnotation.spec, city: Annotation<string> });
const ParentState = Annotation.Root({ ...MessagesAnnotation.spec, route: Annotation<string> });

/** START → router → weather (subgraph: locate → report) → END; `review` stops the subgraph before report. */
function build(review: boolean) {
  const weather = new StateGraph(WeatherState)
    .addNode("locate", () => ({ city: "Paris" }))
    .addNode("report", (state) => ({
      messages: [{ role: "ai", content: `Sunny in ${state.city}`, id: "weather-report" }],
    }))
    .addEdge(START, "locate")
    .addEdge("locate", "report")
    .addEdge("report", END)
    .compile(review ? { interruptBefore: ["report"] } : {});
  return new StateGraph(ParentState)
    .addNode("router", () => ({ route: "weather" }))
    .addNode("weather", weather)
    .addEdge(START, "router")
    .addEdge("router", "weather")
    .addEdge("weather", END)
    .compile();
}

/** The subgraph runs through. */
export const graph = build(false);

/** The subgraph stops before `report`. */
export const reviewed = build(true);
