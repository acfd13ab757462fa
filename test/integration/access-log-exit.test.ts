/**
 * The access log's lines are written to stderr in batches (server/stderr-lines.ts); none may be lost
 * when the process stops. A server process (`npm start`'s entry point) serves a burst of requests
 * and receives SIGTERM in the middle of it: every request that got an answer has exactly one
 * access line, every line is whole JSON, and the final "agentplane stopped" line, written just
 * before the process exits, is there too.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AgentplaneProcess, startAgentplaneProcess } from "../support/agentplane-process.js";
import { createTestDatabase } from "../support/database.js";

const API_KEY = "ap_pt_access_log_exit_test_key_01";
/** Requests in the burst: enough that many are answered in the same turn of the server's event loop. */
const REQUESTS = 300;
/** SIGTERM goes out once this many have been answered, so the rest arrive while the server stops. */
const ANSWERED_BEFORE_SIGTERM = 100;

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let dataDir: string;
let proc: AgentplaneProcess | undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), "agentplane-access-exit-"));
});

afterAll(async () => {
  proc?.child.kill("SIGKILL");
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

it("writes every answered request's line, and the final line, before the process exits", async () => {
  const server = await startAgentplaneProcess({
    DATABASE_URL: db.url,
    AGENTPLANE_API_KEY: API_KEY,
    AGENTPLANE_DATA_DIR: dataDir,
    AGENTPLANE_LOG_LEVEL: "info",
  });
  proc = server;

  let answeredCount = 0;
  const answered: string[] = [];
  const burst = Array.from({ length: REQUESTS }, async (_, i) => {
    const requestId = `exit-burst-${i}`;
    try {
      const res = await fetch(`${server.baseUrl}/api/v1/whoami`, {
        headers: { "x-api-key": API_KEY, "x-request-id": requestId },
      });
      await res.arrayBuffer();
      answered.push(requestId);
    } catch {
      // Refused or cut off once the server stopped accepting: no answer, so no line is owed.
    }
    answeredCount++;
    if (answeredCount === ANSWERED_BEFORE_SIGTERM) server.child.kill("SIGTERM");
  });
  await Promise.all(burst);
  expect(await server.exited).toBe("exit 0");
  // "exit" can come before the last of stderr has been read: wait for the pipe's end.
  const stderr = server.child.stderr;
  if (stderr && !stderr.readableEnded) await new Promise((resolve) => stderr.once("end", resolve));
  expect(answered.length).toBeGreaterThanOrEqual(ANSWERED_BEFORE_SIGTERM);

  const lines = server
    .stderr()
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { message: string; requestId?: string });
  const accessIds = lines.filter((line) => line.message === "request").map((line) => line.requestId);
  for (const requestId of answered)
    expect(
      accessIds.filter((id) => id === requestId),
      requestId,
    ).toHaveLength(1);
  expect(lines.at(-1)?.message).toBe("agentplane stopped");
});
