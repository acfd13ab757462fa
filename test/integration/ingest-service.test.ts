/**
 * The in-process ingest API (what the agent server will call) on a real database: usage counting
 * once per trace and the reporting switch, concurrent auto-creation of one project, update-only
 * patches, feedback that arrives before its run, and project deletes racing a batch that writes
 * into the project (migration 0027: a lock per project and batch, a trigger in place of the cascade).
 */
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { createFeedback, lockFeedbackRuns } from "../../server/store/tracing/feedback-store.js";
import { deleteProject, ensureProjectsByName } from "../../server/store/tracing/project-store.js";
import { refreshFeedbackStats, upsertPostedRuns } from "../../server/store/tracing/run-store.js";
import { inWorkspaceScope } from "../../server/store/tracing/workspace-scope.js";
import { createIngestService, type IngestActor } from "../../server/tracing/ingest-service.js";
import { normalizeFeedback, normalizeRun } from "../../server/tracing/run-normalizer.js";
import { useTestDatabase } from "../support/database.js";

const db = useTestDatabase();
let actor: IngestActor;

beforeAll(async () => {
  const organizationId = uuidv7();
  const workspaceId = uuidv7();
  await db()
    .sql`insert into organizations (id, display_name, plan) values (${organizationId}, 'o', 'enterprise')`;
  await db().sql`
    insert into workspaces (id, organization_id, display_name, tenant_handle)
    values (${workspaceId}, ${organizationId}, 'w', ${`w-${workspaceId.slice(-6)}`})`;
  actor = { workspaceId, userId: null, apiKeyId: null };
});

function rootRun(project: string) {
  const id = uuidv7();
  return { id, name: "root", run_type: "chain", session_name: project, inputs: { a: 1 } };
}

async function projectTraces(project: string): Promise<number> {
  const [row] = await db().sql<{ n: number }[]>`
    select coalesce(sum(u.traces), 0)::int as n from usage_rollups u
    join tracing_projects p on p.id = u.dimension_id
    where u.dimension = 'project' and u.granularity = 'day' and p.name = ${project}`;
  return row?.n ?? 0;
}

/** Resolves once a statement that contains `text` waits for a lock; fails after 20 s. */
async function lockWaitOf(text: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const waiting = await db().sql`
      select 1 from pg_stat_activity
      where wait_event_type = 'Lock' and strpos(query, ${text}) > 0`;
    if (waiting.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no statement with "${text}" waited for a lock within 20 s`);
}

async function projectRuns(projectId: string): Promise<number> {
  const [row] = await db().sql<
    { n: number }[]
  >`select count(*)::int as n from runs where session_id = ${projectId}`;
  return row?.n ?? 0;
}

describe("ingestRuns", () => {
  it("counts a trace once in the usage rollups, however often it is re-sent or patched", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: true });
    const project = `usage-${randomUUID()}`;
    const run = rootRun(project);
    const result = await ingest.ingestRuns(actor, { post: [run] });
    expect(result).toEqual({ runs: 1, feedback: 0, newTraces: 1 });
    await ingest.ingestRuns(actor, { post: [run] });
    await ingest.ingestRuns(actor, { patch: [{ id: run.id, end_time: Date.now(), outputs: { b: 2 } }] });
    expect(await projectTraces(project)).toBe(1);
    const [stored] = await db().sql`select status, inputs, outputs from runs where id = ${run.id}`;
    expect(stored).toEqual({ status: "success", inputs: { a: 1 }, outputs: { b: 2 } });
  });

  it("records no usage with reporting off", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const project = `no-usage-${randomUUID()}`;
    expect((await ingest.ingestRuns(actor, { post: [rootRun(project)] })).newTraces).toBe(1);
    expect(await projectTraces(project)).toBe(0);
  });

  it("creates one project when concurrent batches name the same new project", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: true });
    const project = `race-${randomUUID()}`;
    await Promise.all(
      Array.from({ length: 4 }, () => ingest.ingestRuns(actor, { post: [rootRun(project)] })),
    );
    const projects = await db().sql`select id from tracing_projects where name = ${project}`;
    expect(projects).toHaveLength(1);
    expect(await db().sql`select id from runs where session_id = ${projects[0]?.id}`).toHaveLength(4);
    expect(await projectTraces(project)).toBe(4);
  });

  it("rejects a patch without dotted_order of a run that is not stored, storing nothing of the batch", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: true });
    const posted = rootRun(`patch-${randomUUID()}`);
    const unknown = uuidv7();
    const error = await ingest
      .ingestRuns(actor, { post: [posted], patch: [{ id: unknown, end_time: Date.now() }] })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(error?.code).toBe(Code.NotFound);
    expect(error?.rawMessage).toContain(`run ${unknown} not found`);
    expect(await db().sql`select id from runs where id = ${posted.id}`).toHaveLength(0);
  });

  it("fills feedback_stats of a run whose feedback arrived first", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const run = rootRun(`feedback-${randomUUID()}`);
    const feedback = [
      { id: randomUUID(), run_id: run.id, key: "quality", score: 1, value: "good" },
      { id: randomUUID(), run_id: run.id, key: "quality", score: 0, value: "good" },
      { id: randomUUID(), run_id: run.id, key: "note", comment: "no score" },
    ];
    await ingest.ingestRuns(actor, { feedback });
    await ingest.ingestRuns(actor, { post: [run] });
    const [stored] = await db().sql`select feedback_stats from runs where id = ${run.id}`;
    expect(stored?.feedback_stats).toEqual({
      quality: { n: 2, avg: 0.5, values: { good: 2 } },
      note: { n: 1, avg: null, values: {} },
    });
  });

  it("fills feedback_stats of the runs of a batch whose feedback arrived first, and of those only", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const project = `feedback-children-${randomUUID()}`;
    const stamp = new Date()
      .toISOString()
      .replace(/[-:]/g, "")
      .replace(/\.(\d{3})Z$/, "$1000Z");
    const root = { ...rootRun(project), dotted_order: "" };
    root.dotted_order = `${stamp}${root.id}`;
    const child = (name: string) => {
      const run = { ...rootRun(project), name, trace_id: root.id, parent_run_id: root.id };
      return { ...run, dotted_order: `${root.dotted_order}.${stamp}${run.id}` };
    };
    const [early, plain, later, alongside] = ["early", "plain", "later", "alongside"].map(child) as [
      ReturnType<typeof child>,
      ReturnType<typeof child>,
      ReturnType<typeof child>,
      ReturnType<typeof child>,
    ];
    const item = (runId: string, key: string) => ({ id: randomUUID(), run_id: runId, key, score: 1 });
    await ingest.ingestRuns(actor, { feedback: [item(early.id, "early"), item(later.id, "later")] });
    // A batch without feedback: of its runs, only the one whose feedback came first gets stats.
    await ingest.ingestRuns(actor, { post: [root, early, plain] });
    // A batch with feedback of its own and a run whose feedback came first: both get stats.
    await ingest.ingestRuns(actor, { post: [later, alongside], feedback: [item(alongside.id, "alongside")] });
    const stats = await db().sql<{ name: string; feedback_stats: unknown }[]>`
      select name, feedback_stats from runs where trace_id = ${root.id} order by name`;
    expect(stats).toEqual([
      { name: "alongside", feedback_stats: { alongside: { n: 1, avg: 1, values: {} } } },
      { name: "early", feedback_stats: { early: { n: 1, avg: 1, values: {} } } },
      { name: "later", feedback_stats: { later: { n: 1, avg: 1, values: {} } } },
      { name: "plain", feedback_stats: null },
      { name: "root", feedback_stats: null },
    ]);
  });

  it("counts feedback created through the API while the batch that creates its run writes", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const run = rootRun(`feedback-race-${randomUUID()}`);
    const item = normalizeFeedback({ id: randomUUID(), run_id: run.id, key: "race", score: 1 });
    let batch: Promise<unknown> = Promise.resolve();
    // As the feedback API creates an item: locked, stored, the run's stats refreshed (the run is
    // not stored yet, so nothing is), and held open while the batch starts.
    await inWorkspaceScope(db().sql, [actor.workspaceId], async (tx) => {
      await lockFeedbackRuns(tx, actor.workspaceId, [run.id]);
      await createFeedback(tx, actor.workspaceId, item);
      await refreshFeedbackStats(tx, actor.workspaceId, [run.id]);
      batch = ingest.ingestRuns(actor, { post: [run] });
      await lockWaitOf("pg_advisory_xact_lock");
    });
    await batch;
    const [stored] = await db().sql`select feedback_stats from runs where id = ${run.id}`;
    expect(stored?.feedback_stats).toEqual({ race: { n: 1, avg: 1, values: {} } });
  });

  it("counts feedback created through the API for a run a batch is still writing, once the batch commits", async () => {
    const run = rootRun(`feedback-late-${randomUUID()}`);
    const item = normalizeFeedback({ id: randomUUID(), run_id: run.id, key: "late", score: 0 });
    const created = await inWorkspaceScope(db().sql, [actor.workspaceId], async (tx) => {
      // A batch in flight: its runs locked as the ingest locks them and written, not yet committed.
      await lockFeedbackRuns(tx, actor.workspaceId, [run.id]);
      const projectId = (await ensureProjectsByName(tx, actor.workspaceId, [run.session_name])).get(
        run.session_name,
      ) as string;
      const row = Object.assign(normalizeRun(run, "post"), { projectId });
      await upsertPostedRuns(tx, actor.workspaceId, { userId: null, apiKeyId: null }, [row]);
      const creating = inWorkspaceScope(db().sql, [actor.workspaceId], async (other) => {
        await lockFeedbackRuns(other, actor.workspaceId, [run.id]);
        await createFeedback(other, actor.workspaceId, item);
        await refreshFeedbackStats(other, actor.workspaceId, [run.id]);
      });
      await lockWaitOf("pg_advisory_xact_lock");
      // Wrapped: returned bare, the transaction would wait for the change that waits for it.
      return { creating };
    });
    await created.creating;
    const [stored] = await db().sql`select feedback_stats from runs where id = ${run.id}`;
    expect(stored?.feedback_stats).toEqual({ late: { n: 1, avg: 0, values: {} } });
  });

  it("deletes the runs of a purged workspace, through its projects", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const organizationId = uuidv7();
    const workspaceId = uuidv7();
    await db()
      .sql`insert into organizations (id, display_name, plan) values (${organizationId}, 'o', 'enterprise')`;
    await db().sql`
      insert into workspaces (id, organization_id, display_name, tenant_handle)
      values (${workspaceId}, ${organizationId}, 'gone', ${`g-${workspaceId.slice(-6)}`})`;
    const run = rootRun(`purged-${randomUUID()}`);
    await ingest.ingestRuns({ workspaceId, userId: null, apiKeyId: null }, { post: [run] });
    expect(await db().sql`select id from runs where workspace_id = ${workspaceId}`).toHaveLength(1);
    await db().sql`delete from workspaces where id = ${workspaceId}`;
    expect(await db().sql`select id from runs where workspace_id = ${workspaceId}`).toHaveLength(0);
  });

  it("derives each run's status whichever write sets end_time or error, the ingest's or another", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const project = `status-${randomUUID()}`;
    const [pending, ended, failed] = [rootRun(project), rootRun(project), rootRun(project)];
    await ingest.ingestRuns(actor, {
      post: [pending, { ...ended, end_time: Date.now() }, { ...failed, end_time: Date.now(), error: "boom" }],
    });
    const status = async (id: string) =>
      (await db().sql<{ status: string }[]>`select status from runs where id = ${id}`)[0]?.status;
    expect([await status(pending.id), await status(ended.id), await status(failed.id)]).toEqual([
      "pending",
      "success",
      "error",
    ]);
    // A patch merged into the stored run, and writers that leave status as it was.
    await ingest.ingestRuns(actor, { patch: [{ id: pending.id, end_time: Date.now() }] });
    expect(await status(pending.id)).toBe("success");
    await db().sql`update runs set error = 'late failure' where id = ${ended.id}`;
    expect(await status(ended.id)).toBe("error");
    await db().sql`update runs set status = 'pending' where id = ${failed.id}`;
    expect(await status(failed.id)).toBe("error");
  });

  it("deletes a project's runs written by a batch the delete waited for", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const project = `deleted-late-${randomUUID()}`;
    await ingest.ingestRuns(actor, { post: [rootRun(project)] });
    let projectId = "";
    const deleted = await inWorkspaceScope(db().sql, [actor.workspaceId], async (tx) => {
      // A batch in flight: its project resolved (and locked) and a run written, not yet committed.
      projectId = (await ensureProjectsByName(tx, actor.workspaceId, [project])).get(project) ?? "";
      const row = Object.assign(normalizeRun(rootRun(project), "post"), { projectId });
      await upsertPostedRuns(tx, actor.workspaceId, { userId: null, apiKeyId: null }, [row]);
      const deleting = inWorkspaceScope(db().sql, [actor.workspaceId], (other) =>
        deleteProject(other, actor.workspaceId, projectId),
      );
      await lockWaitOf("delete from tracing_projects");
      // Wrapped: returned bare, the transaction would wait for the delete that waits for it.
      return { deleting };
    });
    expect(await deleted.deleting).toBe(true);
    expect(await db().sql`select id from tracing_projects where id = ${projectId}`).toHaveLength(0);
    expect(await projectRuns(projectId)).toBe(0);
  });

  it("writes a batch that waited for a project's delete into a new project of its name, or refuses its id", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const project = `deleted-early-${randomUUID()}`;
    await ingest.ingestRuns(actor, { post: [rootRun(project)] });
    const [old] = await db().sql<{ id: string }[]>`select id from tracing_projects where name = ${project}`;
    const oldId = old?.id ?? "";
    const byName = rootRun(project);
    const byId = { ...rootRun(project), session_name: undefined, session_id: oldId };
    const batches = await inWorkspaceScope(db().sql, [actor.workspaceId], async (tx) => {
      await tx`delete from tracing_projects where workspace_id = ${actor.workspaceId} and id = ${oldId}`;
      const sent = [byName, byId].map((run) =>
        ingest.ingestRuns(actor, { post: [run] }).then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        ),
      );
      // The batch by name waits in its look-up of the name, the batch by id in its look-up of the id.
      await lockWaitOf("select id, name from tracing_projects");
      await lockWaitOf("select id from tracing_projects where workspace_id = $1 and id");
      return sent;
    });
    const [namedError, idError] = await Promise.all(batches);
    expect(namedError).toBeUndefined();
    expect(idError?.code).toBe(Code.NotFound);
    const [renewed] = await db().sql<
      { id: string }[]
    >`select id from tracing_projects where name = ${project}`;
    expect(renewed?.id).not.toBe(oldId);
    expect(await projectRuns(oldId)).toBe(0);
    expect(await db().sql`select session_id from runs where id = ${byName.id}`).toEqual([
      { session_id: renewed?.id },
    ]);
    expect(await db().sql`select id from runs where id = ${byId.id}`).toHaveLength(0);
  });

  it("writes into a project renamed since a batch named it only under its new name", async () => {
    const ingest = createIngestService({ sql: db().sql, usageReporting: false });
    const project = `renamed-${randomUUID()}`;
    await ingest.ingestRuns(actor, { post: [rootRun(project)] });
    const [first] = await db().sql<{ id: string }[]>`select id from tracing_projects where name = ${project}`;
    await db().sql`update tracing_projects set name = ${`${project}-new`} where id = ${first?.id ?? ""}`;
    const later = rootRun(project);
    await ingest.ingestRuns(actor, { post: [later] });
    const [current] = await db().sql<
      { id: string }[]
    >`select id from tracing_projects where name = ${project}`;
    expect(current?.id).not.toBe(first?.id);
    expect(await db().sql`select session_id from runs where id = ${later.id}`).toEqual([
      { session_id: current?.id },
    ]);
    expect(await projectRuns(first?.id ?? "")).toBe(1);
  });

  it("writes into the project another process created again under a name this one remembers", async () => {
    // Two services: what each has resolved is its own, as in two server processes.
    const here = createIngestService({ sql: db().sql, usageReporting: false });
    const elsewhere = createIngestService({ sql: db().sql, usageReporting: false });
    const project = `recreated-${randomUUID()}`;
    await here.ingestRuns(actor, { post: [rootRun(project)] });
    await db()
      .sql`delete from tracing_projects where workspace_id = ${actor.workspaceId} and name = ${project}`;
    await elsewhere.ingestRuns(actor, { post: [rootRun(project)] });
    const [recreated] = await db().sql<
      { id: string }[]
    >`select id from tracing_projects where name = ${project}`;
    const later = rootRun(project);
    await here.ingestRuns(actor, { post: [later] });
    expect(await db().sql`select id from tracing_projects where name = ${project}`).toHaveLength(1);
    expect(await db().sql`select session_id from runs where id = ${later.id}`).toEqual([
      { session_id: recreated?.id },
    ]);
    expect(await projectRuns(recreated?.id ?? "")).toBe(2);
  });

  it("rejects a batch whose transaction fails at its first statement, leaving no promise unhandled", async () => {
    // A workspace id Postgres refuses fails the scope, and with it every statement pipelined
    // behind it (as a lost connection would): the locks as well as the projects' lookup.
    const unhandled: unknown[] = [];
    const collect = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", collect);
    try {
      const ingest = createIngestService({ sql: db().sql, usageReporting: false });
      await expect(
        ingest.ingestRuns(
          { ...actor, workspaceId: "not-a-uuid" },
          { post: [rootRun(`failed-${randomUUID()}`)] },
        ),
      ).rejects.toThrow();
      // Node reports an unhandled rejection after the turn it happened in.
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off("unhandledRejection", collect);
    }
    expect(unhandled).toEqual([]);
  });
});
