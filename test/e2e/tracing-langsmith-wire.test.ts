/**
 * The `langsmith` 0.12 wire through its own client: compressed multipart (the SDK compresses as
 * runs queue when /info allows it: gzip on Node 20, zstd where zlib has it), feedback in the
 * multipart batches, runs sent to an agent address, and run times that never go backwards; zstd
 * bodies framed as the SDKs send them.
 */
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { AgentAddress, type Client, type Run } from "langsmith";
import { traceable } from "langsmith/traceable";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { langsmithClient } from "../support/langsmith-client.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const { Encoder } = createRequire(import.meta.url)("@toondepauw/node-zstd") as {
  Encoder: new (level: number) => { encodeSync(data: Buffer): Buffer };
};

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.stop();
});

async function listRuns(client: Client, projectName: string): Promise<Run[]> {
  const runs: Run[] = [];
  for await (const run of client.listRuns({ projectName })) runs.push(run);
  return runs;
}

describe("GET /api/v1/info", () => {
  it("advertises gzip and zstd bodies", async () => {
    const info = (await (await t.fetch("/api/v1/info")).json()) as {
      instance_flags: Record<string, boolean>;
    };
    expect(info.instance_flags).toMatchObject({ gzip_body_enabled: true, zstd_compression_enabled: true });
  });
});

describe("langsmith 0.12's own client", () => {
  it("sends 16 nested traceable runs compressed, and none ends before it starts", async () => {
    const { client, sent } = langsmithClient(t);
    const project = `wire-${randomUUID()}`;
    const options = { client, project_name: project, tracingEnabled: true } as const;
    const leaf = traceable(async (i: number) => i * 2, { ...options, name: "leaf", run_type: "tool" });
    const root = traceable(
      async () => {
        let sum = 0;
        for (let i = 0; i < 15; i++) sum += await leaf(i);
        return { sum };
      },
      { ...options, name: "root" },
    );
    await root();
    await client.awaitPendingTraceBatches();
    const multipart = sent.filter((r) => r.path === "/api/v1/runs/multipart");
    expect(multipart.length).toBeGreaterThan(0);
    // zstd where the runtime's zlib has it (Node 22.15+), else gzip: compressed either way.
    for (const request of multipart) {
      expect(["gzip", "zstd"]).toContain(request.encoding);
      expect(request.status).toBe(202);
    }
    const runs = await listRuns(client, project);
    expect(runs).toHaveLength(16);
    for (const run of runs) {
      expect(Date.parse(String(run.end_time))).toBeGreaterThanOrEqual(Date.parse(String(run.start_time)));
    }
    // The start is kept as the SDK sent it: with the microseconds of its dotted_order.
    for (const run of runs) {
      const stamp = (run.dotted_order ?? "").split(".").pop()?.slice(0, 21).replace("T", "");
      expect(String(run.start_time).replace(/\D/g, "").slice(0, 20)).toBe(stamp);
    }
  });

  it("sends feedback as feedback.<id> parts of its multipart batches", async () => {
    const { client, sent } = langsmithClient(t);
    const project = `feedback-${randomUUID()}`;
    let runId = "";
    const traced = traceable(
      async () => {
        return "ok";
      },
      {
        client,
        project_name: project,
        tracingEnabled: true,
        name: "rated",
        on_end: (tree) => {
          runId = tree.id;
        },
      },
    );
    await traced();
    await client.awaitPendingTraceBatches();
    const projectId = (await client.readProject({ projectName: project })).id;
    for (const [key, score] of [
      ["correctness", 1],
      ["helpfulness", 0.5],
    ] as const) {
      await client.createFeedback(runId, key, {
        score,
        traceId: runId,
        projectId: undefined,
        sessionId: projectId,
      });
    }
    await client.awaitPendingTraceBatches();
    expect(sent.some((r) => r.path === "/api/v1/feedback")).toBe(false);
    await vi.waitFor(async () => {
      const [run] = await listRuns(client, project);
      expect(run?.feedback_stats).toMatchObject({
        correctness: { n: 1, avg: 1 },
        helpfulness: { n: 1, avg: 0.5 },
      });
    });
  });

  it("files runs sent to an agent address under the agent's project", async () => {
    const { client } = langsmithClient(t);
    const agent = `agent-${randomUUID().slice(0, 8)}`;
    const traced = traceable(async () => "hi", {
      client,
      tracingEnabled: true,
      name: "addressed",
      address: new AgentAddress(agent, "staging"),
    });
    await traced();
    await client.awaitPendingTraceBatches();
    expect((await listRuns(client, `${agent}/staging`)).map((r) => r.name)).toEqual(["addressed"]);
  });
});

/** A multipart body with one run, as the SDK frames it. */
function multipartRun(project: string): { body: Buffer; boundary: string; id: string } {
  const id = randomUUID();
  const now = new Date();
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(".", "").replace("Z", "000Z");
  const run = JSON.stringify({
    id,
    name: "zstd-run",
    run_type: "chain",
    start_time: now.toISOString(),
    end_time: now.getTime() + 3,
    trace_id: id,
    dotted_order: `${stamp}${id}`,
    session_name: project,
  });
  const boundary = "----LangSmithFormBoundaryzstd";
  const body = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="post.${id}"\r\nContent-Type: application/json; length=${Buffer.byteLength(run)}\r\n\r\n${run}\r\n--${boundary}--\r\n`,
  );
  return { body, boundary, id };
}

describe("zstd bodies", () => {
  it("decodes a zstd multipart body, refuses data that is not zstd (400) or may inflate past the limit (413)", async () => {
    const project = `zstd-${randomUUID()}`;
    const { body, boundary } = multipartRun(project);
    const headers = {
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-encoding": "zstd",
    };
    const ok = await t.fetch("/api/v1/runs/multipart", {
      method: "POST",
      body: new Uint8Array(new Encoder(1).encodeSync(body)),
      headers,
    });
    expect(ok.status).toBe(202);
    const { client } = langsmithClient(t);
    expect((await listRuns(client, project)).map((r) => r.name)).toEqual(["zstd-run"]);

    const garbage = await t.fetch("/api/v1/runs/multipart", {
      method: "POST",
      body: Buffer.from("not zstd"),
      headers,
    });
    expect(garbage.status).toBe(400);
    // A frame that declares 64 MiB of content (single segment, 4-byte size), with one RLE block.
    const bomb = Buffer.alloc(13);
    bomb.writeUInt32LE(0xfd2fb528, 0);
    bomb[4] = 0xa0; // Frame_Content_Size of 4 bytes, single segment.
    bomb.writeUInt32LE(64 * 1024 * 1024, 5);
    bomb.writeUIntLE((1 << 0) | (1 << 1) | (100 << 3), 9, 3); // the last block, RLE, 100 bytes.
    const tooLarge = await t.fetch("/api/v1/runs/multipart", { method: "POST", body: bomb, headers });
    expect(tooLarge.status).toBe(413);
  });
});
