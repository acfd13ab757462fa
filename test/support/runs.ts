import { uuidv7 } from "../../server/ids.js";
import { type AgentRunRecord, insertRun, type NewRun } from "../../server/store/agents/agent-run-store.js";
import type { Queryable } from "../../server/store/db.js";

/**
 * Inserts a pending run of graph `g` on `threadId` through `q` (a transaction's, or the pool), as
 * the store tests need it: no creator, `enqueue`, empty metadata and kwargs unless `overrides` say
 * otherwise. The thread's metadata is left alone.
 */
export function insertTestRun(
  q: Queryable,
  run: { workspaceId: string; assistantId: string; threadId: string },
  overrides: Partial<NewRun> = {},
): Promise<AgentRunRecord> {
  return insertRun(
    q,
    {
      runId: uuidv7(),
      graphId: "g",
      metadata: {},
      kwargs: {},
      multitaskStrategy: "enqueue",
      temporary: false,
      afterSeconds: 0,
      creator: { apiKeyId: null, userId: null },
      ...run,
      ...overrides,
    },
    { threadMetadata: null },
  );
}
