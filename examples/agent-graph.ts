/**
 * The bundled example graph, served when no graph config file exists: a tool-calling agent on a
 * scripted chat model, so it runs without any LLM key. The model asks for the `current_time` tool
 * when the last message mentions "time", then answers with the tool's result; otherwise it replies
 * from a canned list. Swap `model` for a real chat model to get a real agent.
 */
import { AIMessage, type BaseMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { END, MessagesZodState, START, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

/** The tool the agent can call. */
const currentTime = tool(async () => new Date().toISOString(), {
  name: "current_time",
  description: "The current date and time in ISO 8601.",
  schema: z.object({}),
});

/** Canned replies, used in turn. */
const model = new FakeListChatModel({
  responses: ["Hello! I am agentplane's example agent.", "Ask me for the time to see a tool call."],
});

/** Run-time settings of the example (its config schema). */
const ExampleConfig = z.object({
  /** A system prompt; the scripted model ignores it, a real one would not. */
  system_prompt: z.string().optional(),
});

async function callModel(state: { messages: BaseMessage[] }): Promise<{ messages: BaseMessage[] }> {
  const last = state.messages.at(-1);
  if (last instanceof ToolMessage) {
    return { messages: [new AIMessage(`The time is ${String(last.content)}.`)] };
  }
  if (typeof last?.content === "string" && /\btime\b/i.test(last.content)) {
    return {
      messages: [
        new AIMessage({
          content: "",
          tool_calls: [{ id: `call_${Date.now()}`, name: currentTime.name, args: {} }],
        }),
      ],
    };
  }
  return { messages: [await model.invoke(state.messages)] };
}

function route(state: { messages: BaseMessage[] }): "tools" | typeof END {
  const last = state.messages.at(-1);
  return last instanceof AIMessage && (last.tool_calls?.length ?? 0) > 0 ? "tools" : END;
}

/** The uncompiled example graph; the registry compiles it. */
export const graph = new StateGraph(MessagesZodState, ExampleConfig)
  .addNode("agent", callModel)
  .addNode("tools", new ToolNode([currentTime]))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", route, ["tools", END])
  .addEdge("tools", "agent");
