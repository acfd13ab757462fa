/**
 * `chat`: one node that writes a custom stream event and answers through a fake chat model that
 * streams its reply token by token, so every stream mode (messages, events, custom…) has output
 * without an LLM key.
 */
import { FakeListChatModel } from "@langchain/core/utils/testing";
import {
  END,
  type LangGraphRunnableConfig,
  MessagesAnnotation,
  START,
  StateGraph,
} from "@langchain/langgraph";

/** The model's only answer: short, so `messages/partial` yields one event per character. */
export const CHAT_REPLY = "Hi!";

const model = new FakeListChatModel({ responses: [CHAT_REPLY] });

/** START → agent → END. */
export const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", async (state, config: LangGraphRunnableConfig) => {
    config.writer?.({ progress: "thinking" });
    const reply = await model.invoke(state.messages, config);
    return { messages: [reply] };
  })
  .addEdge(START, "agent")
  .addEdge("agent", END)
  .compile();
