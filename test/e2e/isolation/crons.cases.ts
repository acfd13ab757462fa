import { createClient } from "@connectrpc/connect";
import { expect } from "vitest";
import { CronService } from "../../../gen/agentplane/agents/v1/cron_service_pb.js";
import { ThreadService } from "../../../gen/agentplane/agents/v1/thread_service_pb.js";
import type { AgentplaneClient } from "../../../sdk/index.js";
import { ANSWERED, countOf, DENIED, isolationSuite, listOf, NOT_FOUND } from "./isolation-suite.js";

const crons = (c: AgentplaneClient) => createClient(CronService, c.transport);
const threads = (c: AgentplaneClient) => createClient(ThreadService, c.transport);

/** Text only A's crons hold (their metadata and input). */
const SECRET = "secret-of-A-crons";
/** A schedule that never comes due during the test: fires once a year. */
const YEARLY = "0 0 1 1 *";

/**
 * Crons: a thread cron and a stateless cron of workspace A, whose metadata and input hold A's
 * secret. B can neither read, update nor delete them, nor create a cron on A's thread; B's search
 * and count see only B's own look-alike cron.
 */
export const suite = isolationSuite({
  service: "crons",
  async setup({ adminA, adminB, workspaceA }) {
    const thread = await threads(adminA).createThread({});
    const threadId = thread.threadId ?? "";
    const metadata = { kind: { case: "stringValue" as const, value: SECRET } };
    const onThread = await crons(adminA).createCron({
      threadId,
      assistantId: "agent",
      schedule: YEARLY,
      metadata: { kind: { case: "structValue", value: { fields: { secret: metadata } } } },
    });
    const stateless = await crons(adminA).createCron({
      assistantId: "agent",
      schedule: YEARLY,
      input: { kind: { case: "structValue", value: { fields: { note: metadata } } } },
      metadata: {
        kind: {
          case: "structValue",
          value: { fields: { shared: { kind: { case: "stringValue", value: "iso" } } } },
        },
      },
    });
    await crons(adminB).createCron({
      assistantId: "agent",
      schedule: YEARLY,
      metadata: {
        kind: {
          case: "structValue",
          value: { fields: { shared: { kind: { case: "stringValue", value: "iso" } } } },
        },
      },
    });
    return { threadId, cronId: onThread.cronId ?? "", statelessId: stateless.cronId ?? "", workspaceA };
  },
  secrets: (f) => [f.cronId, f.statelessId, f.threadId, SECRET],
  cases: [
    {
      ...NOT_FOUND,
      name: "CronService.CreateCron on A's thread",
      rest: (f) => ({
        method: "POST",
        path: `/threads/${f.threadId}/runs/crons`,
        body: { assistant_id: "agent", schedule: YEARLY },
      }),
      connect: (c, f) =>
        crons(c).createCron({ threadId: f.threadId, assistantId: "agent", schedule: YEARLY }),
    },
    {
      ...NOT_FOUND,
      name: "CronService.GetCron",
      rest: (f) => ({ method: "GET", path: `/runs/crons/${f.cronId}` }),
      connect: (c, f) => crons(c).getCron({ cronId: f.cronId }),
    },
    {
      ...NOT_FOUND,
      name: "CronService.UpdateCron",
      rest: (f) => ({ method: "PATCH", path: `/runs/crons/${f.cronId}`, body: { enabled: false } }),
      connect: (c, f) => crons(c).updateCron({ cronId: f.cronId, enabled: false }),
    },
    {
      ...NOT_FOUND,
      name: "CronService.DeleteCron",
      rest: (f) => ({ method: "DELETE", path: `/runs/crons/${f.statelessId}` }),
      connect: (c, f) => crons(c).deleteCron({ cronId: f.statelessId }),
    },
    {
      ...DENIED,
      name: "CronService.GetCron with x-tenant-id of A",
      rest: (f) => ({ method: "GET", path: `/runs/crons/${f.cronId}`, tenantId: f.workspaceA }),
      connect: (c, f) => crons(c).getCron({ cronId: f.cronId }),
    },
    {
      ...ANSWERED,
      name: "CronService.SearchCrons (B's look-alike only)",
      rest: () => ({ method: "POST", path: "/runs/crons/search", body: { metadata: { shared: "iso" } } }),
      connect: (c) =>
        crons(c)
          .searchCrons({ metadata: { shared: "iso" } })
          .then((r) => r.crons),
      expectB: listOf(1),
      expectA: listOf(1),
    },
    {
      ...ANSWERED,
      name: "CronService.SearchCrons by A's thread",
      rest: (f) => ({ method: "POST", path: "/runs/crons/search", body: { thread_id: f.threadId } }),
      connect: (c, f) =>
        crons(c)
          .searchCrons({ threadId: f.threadId })
          .then((r) => r.crons),
      expectB: listOf(0),
    },
    {
      ...ANSWERED,
      name: "CronService.CountCrons",
      rest: () => ({ method: "POST", path: "/runs/crons/count", body: { metadata: { shared: "iso" } } }),
      connect: (c) =>
        crons(c)
          .countCrons({ metadata: { shared: "iso" } })
          .then((r) => r.count),
      expectB: countOf(1),
      expectA: countOf(1),
    },
    {
      ...ANSWERED,
      name: "CronService.CountCrons of A's thread",
      rest: (f) => ({ method: "POST", path: "/runs/crons/count", body: { thread_id: f.threadId } }),
      connect: (c, f) =>
        crons(c)
          .countCrons({ threadId: f.threadId })
          .then((r) => r.count),
      expectB: countOf(0),
      expectA: countOf(1),
    },
  ],
  async verify({ t, workspaceA }, f) {
    for (const id of [f.cronId, f.statelessId]) {
      const res = await t.fetch(`/runs/crons/${id}`, { tenantId: workspaceA });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { enabled: boolean }).enabled).toBe(true);
    }
  },
});
