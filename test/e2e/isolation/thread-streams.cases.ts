import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { ThreadService } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import { ThreadStreamService } from "../../../gen/agentplane/agents/v1/thread_stream_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { ANSWERED, isolationSuite, NOT_FOUND } from "./isolation-suite.js";

const streams = (c: AgentplaneClient) => createClient(ThreadStreamService, c.transport);
const threads = (c: AgentplaneClient) => createClient(ThreadService, c.transport);

/** Text only A's thread holds (its run's input). */
const SECRET = "secret-of-A-thread-streams";

/** Reads a server stream to its end (a refused stream throws at its first read). */
async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream) {
    // Nothing of A may arrive; the case checks what the call threw.
  }
}

/** B's answer to a command on A's thread: the protocol's error, naming nothing of A. */
function refusedCommand(answer: unknown): void {
  expect(answer).toMatchObject({ type: "error", error: "no_such_run" });
}

/**
 * The streaming protocol (ThreadStreamService): a thread of workspace A whose run's input holds A's
 * secret. B can neither stream its events nor read its state, checkpoints or tree with commands.
 */
export const suite = isolationSuite({
  service: "thread-streams",
  async setup({ t, adminA, workspaceA }) {
    const thread = await threads(adminA).createThread({});
    const threadId = thread.threadId!;
    const res = await t.fetch(`/threads/${threadId}/runs/wait`, {
      method: "POST",
      tenantId: workspaceA,
      body: JSON.stringify({
        assistant_id: "agent",
        input: { messages: [{ role: "human", content: SECRET }] },
      }),
    });
    expect(res.status).toBe(200);
    return { threadId };
  },
  secrets: () => [SECRET],
  cases: [
    {
      ...NOT_FOUND,
      name: "ThreadStreamService.StreamThreadEvents of A's thread",
      rest: (f) => ({
        method: "POST",
        path: `/threads/${f.threadId}/stream/events`,
        body: { channels: ["values"] },
      }),
      connect: (c, f) => drain(streams(c).streamThreadEvents({ threadId: f.threadId, channels: ["values"] })),
    },
    ...(["state.get", "state.listCheckpoints", "agent.getTree"] as const).map((method) => ({
      ...ANSWERED,
      name: `ThreadStreamService.SendThreadCommand ${method} on A's thread`,
      rest: (f: { threadId: string }) => ({
        method: "POST",
        path: `/threads/${f.threadId}/commands`,
        body: { id: 1, method, params: { namespace: [] } },
      }),
      connect: (c: AgentplaneClient, f: { threadId: string }) =>
        streams(c).sendThreadCommand({ threadId: f.threadId, id: 1, method, params: { namespace: [] } }),
      expectB: refusedCommand,
      // A reads its own thread: the state holds the secret; the checkpoints and tree do not.
      ...(method === "state.get" ? {} : { expectA: false as const }),
    })),
  ],
});
