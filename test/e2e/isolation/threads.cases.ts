import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { ThreadService } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { uuidv7 } from "../../../server/ids.js";
import type { TestApp } from "../../support/test-app.js";
import { ANSWERED, countOf, DENIED, isolationSuite, listOf, NOT_FOUND } from "./isolation-suite.js";

const threads = (c: AgentplaneClient) => createClient(ThreadService, c.transport);

/** Text only A's threads hold. */
const SECRET = "secret-of-A-threads";
/** Metadata of the look-alike threads: two in A, one in B. */
const SHARED = { shared: "isolation-threads" };
/** The message in the look-alikes' values. */
const LOOK_ALIKE = "look-alike question";
const lookAlikeValues = { messages: [{ content: LOOK_ALIKE }] };

/** Creates a thread of the bundled `agent` graph whose values hold one human message. */
async function createThread(
  t: TestApp,
  tenantId: string,
  body: { thread_id?: string; metadata: object; content: string },
) {
  const message = { messages: [{ type: "human", content: body.content }] };
  const res = await t.fetch("/threads", {
    method: "POST",
    tenantId,
    body: JSON.stringify({
      ...(body.thread_id ? { thread_id: body.thread_id } : {}),
      metadata: { graph_id: "agent", ...body.metadata },
      supersteps: [
        { updates: [{ values: message, as_node: "__input__" }] },
        { updates: [{ values: message, as_node: "__start__" }] },
      ],
    }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { thread_id: string }).thread_id;
}

/**
 * Threads: a thread of workspace A with metadata B must neither see nor change; look-alike threads
 * in both workspaces (same metadata and values) for searches and counts; and a thread id both
 * workspaces use, each for its own thread, so a lookup by id that forgets the workspace would show
 * B A's thread.
 */
export const suite = isolationSuite({
  service: "threads",
  async setup({ t, adminA, workspaceA, workspaceB }) {
    const thread = await threads(adminA).createThread({ metadata: { owner: "a", secret: SECRET } });
    const lookAlikesA = [
      await createThread(t, workspaceA, { metadata: SHARED, content: LOOK_ALIKE }),
      await createThread(t, workspaceA, { metadata: SHARED, content: LOOK_ALIKE }),
    ];
    await createThread(t, workspaceB, { metadata: SHARED, content: LOOK_ALIKE });
    const sharedId = uuidv7();
    await createThread(t, workspaceA, { thread_id: sharedId, metadata: { secret: SECRET }, content: SECRET });
    await createThread(t, workspaceB, { thread_id: sharedId, metadata: { owner: "b" }, content: "B's own" });
    return { threadId: thread.threadId!, workspaceA, lookAlikesA, sharedId };
  },
  secrets: (f) => [f.threadId, ...f.lookAlikesA, SECRET],
  cases: [
    {
      ...NOT_FOUND,
      name: "ThreadService.GetThread",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}` }),
      connect: (c, f) => threads(c).getThread({ threadId: f.threadId }),
    },
    {
      ...NOT_FOUND,
      name: "ThreadService.UpdateThread",
      rest: (f) => ({ method: "PATCH", path: `/threads/${f.threadId}`, body: { metadata: { owner: "b" } } }),
      connect: (c, f) => threads(c).updateThread({ threadId: f.threadId, metadata: { owner: "b" } }),
    },
    {
      ...NOT_FOUND,
      name: "ThreadService.DeleteThread",
      rest: (f) => ({ method: "DELETE", path: `/threads/${f.threadId}` }),
      connect: (c, f) => threads(c).deleteThread({ threadId: f.threadId }),
    },
    {
      ...NOT_FOUND,
      name: "ThreadService.CopyThread",
      rest: (f) => ({ method: "POST", path: `/threads/${f.threadId}/copy` }),
      connect: (c, f) => threads(c).copyThread({ threadId: f.threadId }),
    },
    {
      ...NOT_FOUND,
      name: "ThreadService.GetThreadState",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}/state` }),
      connect: (c, f) => threads(c).getThreadState({ threadId: f.threadId }),
    },
    {
      ...NOT_FOUND,
      name: "ThreadService.GetThreadStateAtCheckpoint",
      rest: (f) => ({
        method: "POST",
        path: `/threads/${f.threadId}/state/checkpoint`,
        body: { checkpoint: {} },
      }),
      connect: (c, f) => threads(c).getThreadStateAtCheckpoint({ threadId: f.threadId, checkpoint: {} }),
    },
    {
      ...NOT_FOUND,
      name: "ThreadService.UpdateThreadState",
      rest: (f) => ({ method: "POST", path: `/threads/${f.threadId}/state`, body: { values: {} } }),
      connect: (c, f) => threads(c).updateThreadState({ threadId: f.threadId }),
    },
    {
      ...NOT_FOUND,
      name: "ThreadService.PatchThreadState",
      rest: (f) => ({ method: "PATCH", path: `/threads/${f.threadId}/state`, body: { metadata: { a: 1 } } }),
      connect: (c, f) => threads(c).patchThreadState({ threadId: f.threadId, metadata: { a: 1 } }),
    },
    {
      ...NOT_FOUND,
      name: "ThreadService.ListThreadHistory",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}/history` }),
      connect: (c, f) => threads(c).listThreadHistory({ threadId: f.threadId }),
    },
    {
      ...NOT_FOUND,
      name: "ThreadService.SearchThreadHistory",
      rest: (f) => ({ method: "POST", path: `/threads/${f.threadId}/history`, body: { limit: 10 } }),
      connect: (c, f) => threads(c).searchThreadHistory({ threadId: f.threadId }),
    },
    {
      ...DENIED,
      name: "ThreadService.GetThread with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: `/threads/${f.threadId}`, tenantId: f.workspaceA }),
      connect: (c, f) => threads(c).getThread({ threadId: f.threadId }),
    },
    {
      ...DENIED,
      name: "ThreadService.SearchThreads with x-tenant-id of A",
      rest: (f) => ({ method: "POST", path: "/threads/search", body: {}, tenantId: f.workspaceA }),
      connect: (c) => threads(c).searchThreads({}),
    },
    {
      ...DENIED,
      name: "ThreadService.CountThreads with x-tenant-id of A",
      rest: (f) => ({ method: "POST", path: "/threads/count", body: {}, tenantId: f.workspaceA }),
      connect: (c) => threads(c).countThreads({}),
    },
    {
      ...ANSWERED,
      name: "ThreadService.SearchThreads by metadata",
      rest: () => ({ method: "POST", path: "/threads/search", body: { metadata: SHARED } }),
      connect: (c) =>
        threads(c)
          .searchThreads({ metadata: SHARED })
          .then((r) => r.threads),
      expectB: listOf(1),
      expectA: listOf(2),
    },
    {
      ...ANSWERED,
      name: "ThreadService.SearchThreads by values",
      rest: () => ({ method: "POST", path: "/threads/search", body: { values: lookAlikeValues } }),
      connect: (c) =>
        threads(c)
          .searchThreads({ values: lookAlikeValues })
          .then((r) => r.threads),
      expectB: listOf(1),
      expectA: listOf(2),
    },
    {
      ...ANSWERED,
      name: "ThreadService.SearchThreads by status, selecting and extracting",
      rest: () => ({
        method: "POST",
        path: "/threads/search",
        body: {
          status: "idle",
          metadata: SHARED,
          select: ["thread_id", "values"],
          extract: { q: "values.messages[0].content" },
        },
      }),
      connect: (c) =>
        threads(c)
          .searchThreads({
            status: "idle",
            metadata: SHARED,
            select: ["thread_id", "values"],
            extract: { q: "values.messages[0].content" },
          })
          .then((r) => r.threads),
      expectB: listOf(1),
      expectA: listOf(2),
    },
    {
      ...ANSWERED,
      name: "ThreadService.SearchThreads by A's thread ids",
      rest: (f) => ({
        method: "POST",
        path: "/threads/search",
        body: { ids: [f.threadId, ...f.lookAlikesA] },
      }),
      connect: (c, f) =>
        threads(c)
          .searchThreads({ ids: [f.threadId, ...f.lookAlikesA] })
          .then((r) => r.threads),
      expectB: listOf(0),
    },
    {
      ...ANSWERED,
      name: "ThreadService.SearchThreads by A's secret metadata",
      rest: () => ({ method: "POST", path: "/threads/search", body: { metadata: { secret: SECRET } } }),
      connect: (c) =>
        threads(c)
          .searchThreads({ metadata: { secret: SECRET } })
          .then((r) => r.threads),
      expectB: listOf(0),
    },
    {
      ...ANSWERED,
      name: "ThreadService.SearchThreads with no filter",
      rest: () => ({ method: "POST", path: "/threads/search", body: { limit: 1000, sort_by: "thread_id" } }),
      connect: (c) =>
        threads(c)
          .searchThreads({ limit: 1000, sortBy: "thread_id" })
          .then((r) => r.threads),
    },
    {
      ...ANSWERED,
      name: "ThreadService.CountThreads by metadata",
      rest: () => ({ method: "POST", path: "/threads/count", body: { metadata: SHARED } }),
      connect: (c) =>
        threads(c)
          .countThreads({ metadata: SHARED })
          .then((r) => r.count),
      expectB: countOf(1),
      expectA: countOf(2),
    },
    {
      ...ANSWERED,
      name: "ThreadService.CountThreads by values and status",
      rest: () => ({
        method: "POST",
        path: "/threads/count",
        body: { values: lookAlikeValues, status: "idle" },
      }),
      connect: (c) =>
        threads(c)
          .countThreads({ values: lookAlikeValues, status: "idle" })
          .then((r) => r.count),
      expectB: countOf(1),
      expectA: countOf(2),
    },
    {
      ...ANSWERED,
      name: "ThreadService.GetThread of an id both workspaces use",
      rest: (f) => ({ method: "GET", path: `/threads/${f.sharedId}` }),
      connect: (c, f) => threads(c).getThread({ threadId: f.sharedId }),
      expectB: (thread) => expect(thread).toMatchObject({ metadata: { owner: "b" } }),
    },
    {
      ...ANSWERED,
      name: "ThreadService.GetThreadState of an id both workspaces use",
      rest: (f) => ({ method: "GET", path: `/threads/${f.sharedId}/state` }),
      connect: (c, f) => threads(c).getThreadState({ threadId: f.sharedId }),
      expectB: (state) => expect(JSON.stringify(state)).toContain("B's own"),
    },
    {
      ...ANSWERED,
      name: "ThreadService.ListThreadHistory of an id both workspaces use",
      rest: (f) => ({ method: "GET", path: `/threads/${f.sharedId}/history?limit=10` }),
      connect: (c, f) =>
        threads(c)
          .listThreadHistory({ threadId: f.sharedId, limit: 10 })
          .then((r) => r.states),
      expectB: (states) => expect((states as unknown[]).length).toBeGreaterThan(0),
    },
    {
      ...ANSWERED,
      name: "ThreadService.SearchThreadHistory of an id both workspaces use",
      rest: (f) => ({
        method: "POST",
        path: `/threads/${f.sharedId}/history`,
        body: { limit: 10, metadata: {} },
      }),
      connect: (c, f) =>
        threads(c)
          .searchThreadHistory({ threadId: f.sharedId, limit: 10, metadata: {} })
          .then((r) => r.states),
      expectB: (states) => expect((states as unknown[]).length).toBeGreaterThan(0),
    },
    {
      ...ANSWERED,
      name: "ThreadService.PruneThreads of A's threads",
      rest: (f) => ({
        method: "POST",
        path: "/threads/prune",
        body: { thread_ids: [f.threadId, ...f.lookAlikesA] },
      }),
      connect: (c, f) =>
        threads(c)
          .pruneThreads({ threadIds: [f.threadId, ...f.lookAlikesA] })
          .then((r) => ({ pruned_count: r.prunedCount })),
      expectB: (answer) => expect(answer).toEqual({ pruned_count: 0 }),
      expectA: false,
    },
  ],
  async verify({ adminA }, f) {
    const thread = await threads(adminA).getThread({ threadId: f.threadId });
    expect(thread.metadata).toEqual({ owner: "a", secret: SECRET });
    const found = await threads(adminA).searchThreads({ ids: [f.threadId, ...f.lookAlikesA] });
    expect(found.threads).toHaveLength(3);
    const state = await threads(adminA).getThreadState({ threadId: f.sharedId });
    expect(JSON.stringify(state.values)).toContain(SECRET);
  },
});
