import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { ThreadService } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { Code } from "../../../sdk/index.js";
import { isolationSuite } from "./isolation-suite.js";

const threads = (c: AgentplaneClient) => createClient(ThreadService, c.transport);

/** Threads: a thread of workspace A, with metadata B must neither see nor change. */
export const suite = isolationSuite({
  service: "threads",
  async setup({ adminA, workspaceA }) {
    const thread = await threads(adminA).createThread({ metadata: { owner: "a", secret: "s" } });
    return { threadId: thread.threadId!, workspaceA };
  },
  cases: [
    {
      name: "ThreadService.GetThread",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}` }),
      connect: (c, f) => threads(c).getThread({ threadId: f.threadId }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ThreadService.UpdateThread",
      rest: (f) => ({ method: "PATCH", path: `/threads/${f.threadId}`, body: { metadata: { owner: "b" } } }),
      connect: (c, f) => threads(c).updateThread({ threadId: f.threadId, metadata: { owner: "b" } }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ThreadService.DeleteThread",
      rest: (f) => ({ method: "DELETE", path: `/threads/${f.threadId}` }),
      connect: (c, f) => threads(c).deleteThread({ threadId: f.threadId }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ThreadService.CopyThread",
      rest: (f) => ({ method: "POST", path: `/threads/${f.threadId}/copy` }),
      connect: (c, f) => threads(c).copyThread({ threadId: f.threadId }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ThreadService.GetThreadState",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}/state` }),
      connect: (c, f) => threads(c).getThreadState({ threadId: f.threadId }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ThreadService.UpdateThreadState",
      rest: (f) => ({ method: "POST", path: `/threads/${f.threadId}/state`, body: { values: {} } }),
      connect: (c, f) => threads(c).updateThreadState({ threadId: f.threadId }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ThreadService.PatchThreadState",
      rest: (f) => ({ method: "PATCH", path: `/threads/${f.threadId}/state`, body: { metadata: { a: 1 } } }),
      connect: (c, f) => threads(c).patchThreadState({ threadId: f.threadId, metadata: { a: 1 } }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ThreadService.SearchThreadHistory",
      rest: (f) => ({ method: "POST", path: `/threads/${f.threadId}/history`, body: { limit: 10 } }),
      connect: (c, f) => threads(c).searchThreadHistory({ threadId: f.threadId }),
      status: 404,
      code: Code.NotFound,
    },
    {
      name: "ThreadService.GetThread with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}`, tenantId: f.workspaceA }),
      connect: (c, f) => threads(c).getThread({ threadId: f.threadId }),
      status: 403,
      code: Code.PermissionDenied,
    },
  ],
  async verify({ adminA }, f) {
    const thread = await threads(adminA).getThread({ threadId: f.threadId });
    expect(thread.metadata).toEqual({ owner: "a", secret: "s" });
    const found = await threads(adminA).searchThreads({ ids: [f.threadId] });
    expect(found.threads).toHaveLength(1);
  },
});
