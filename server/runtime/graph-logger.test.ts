import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { getLogger } from "@langchain/langgraph-sdk/logging";
import { describe, expect, it } from "vitest";
import { createLogger } from "../logger.js";
import { createSdkLogger, registerSdkLogger, withGraphLogContext } from "./graph-logger.js";

/** A JSON logger whose lines are kept, parsed. */
function capture(level: "debug" | "info" = "debug") {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger(level, (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  return { log, lines };
}

describe("createSdkLogger", () => {
  it("maps winston's levels onto ours and takes each call form", () => {
    const { log, lines } = capture();
    const logger = createSdkLogger(log, {});
    logger
      .info("plain", { user: "u1" }, "extra", 3)
      .warn({ message: "as object", step: 2 })
      .error(new Error("boom"))
      .verbose("detail")
      .http("request");
    logger.log("silly", "lowest", { deep: true });
    logger.log({ level: "error", message: "info object", code: 7 });
    expect(lines.map((l) => [l.level, l.message])).toEqual([
      ["info", "plain"],
      ["warn", "as object"],
      ["error", "boom"],
      ["debug", "detail"],
      ["info", "request"],
      ["debug", "lowest"],
      ["error", "info object"],
    ]);
    expect(lines[0]).toMatchObject({ user: "u1", meta: ["extra", 3] });
    expect(lines[1]).toMatchObject({ step: 2 });
    expect(lines[2]).toMatchObject({ error: { name: "Error", message: "boom" } });
    expect(lines[6]).toMatchObject({ code: 7 });
  });

  it("keeps a child's fields on every line and respects the server's level", () => {
    const { log, lines } = capture("info");
    const child = createSdkLogger(log, {}).child({ component: "tools" });
    child.debug("dropped");
    child.info("kept", { n: 1 });
    expect(lines).toEqual([expect.objectContaining({ message: "kept", component: "tools", n: 1 })]);
  });
});

describe("registerSdkLogger", () => {
  it("is what getLogger() returns, naming the graph being loaded", async () => {
    const { log, lines } = capture();
    registerSdkLogger(log);
    await withGraphLogContext("weather", async () => {
      await Promise.resolve();
      getLogger().info("loading");
    });
    getLogger().info("outside any graph");
    expect(lines).toEqual([
      expect.objectContaining({ message: "loading", graph_id: "weather" }),
      expect.not.objectContaining({ graph_id: expect.anything() }),
    ]);
  });

  it("names the node, run and graph inside a run, from the run's metadata", async () => {
    const { log, lines } = capture();
    registerSdkLogger(log);
    const graph = new StateGraph(MessagesAnnotation)
      .addNode("answer", () => {
        getLogger().warn("in a node");
        return {};
      })
      .addEdge(START, "answer")
      .addEdge("answer", END)
      .compile();
    await graph.invoke({ messages: [] }, { metadata: { graph_id: "chat", run_id: "r1", thread_id: "t1" } });
    expect(lines).toEqual([
      expect.objectContaining({
        message: "in a node",
        graph_id: "chat",
        langgraph_node: "answer",
        run_id: "r1",
        thread_id: "t1",
      }),
    ]);
  });
});
