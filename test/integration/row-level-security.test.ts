/**
 * Row-level security on the tracing tables (migration 0020, server/store/tracing/workspace-scope.ts), the
 * layer beneath the workspace conditions of every query: in a workspace scope, SQL that forgets or
 * misbinds its workspace condition still sees and changes only the scope's rows; the scope ends with
 * its transaction; the owner (migrations, jobs that span workspaces, purges) is not confined; and a
 * deployment whose database user is not a superuser migrates once it may switch to the role.
 */
import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import { createSql, pgErrorCode, type Sql } from "../../server/store/db.js";
import { markWorkspaceDeleted, purgeDeletedWorkspace } from "../../server/store/iam/workspace-store.js";
import { migrate } from "../../server/store/migrate.js";
import {
  inWorkspaceScope,
  inWorkspaceScopeWithGenericPlans,
  unconfined,
  type WorkspaceBound,
} from "../../server/store/tracing/workspace-scope.js";
import { createTestDatabase, useTestDatabase } from "../support/database.js";
import { createTestWorkspace, ROW_LEVEL_SECURITY_TABLES } from "../support/tenancy.js";

const db = useTestDatabase();
/** SQLSTATE of a refused privilege or a row a policy rejects. */
const INSUFFICIENT_PRIVILEGE = "42501";

let a: string;
let b: string;

/** Seeds one workspace's rows in every tracing table, as the owner: two of each. */
async function seed(q: WorkspaceBound, workspaceId: string): Promise<void> {
  const project = uuidv7();
  await q`insert into tracing_projects (id, workspace_id, name) values (${project}, ${workspaceId}, 'p')`;
  for (let i = 0; i < 2; i++) {
    const run = uuidv7();
    await q`
      insert into runs (id, workspace_id, session_id, trace_id, name, run_type, start_time, status, is_root, dotted_order)
      values (${run}, ${workspaceId}, ${project}, ${run}, ${`run-${i}`}, 'chain', now(), 'pending', true, ${`d${i}`})`;
    await q`insert into run_feedback (workspace_id, id, run_id, key) values (${workspaceId}, ${uuidv7()}, ${run}, 'k')`;
    await q`
      insert into run_attachments (workspace_id, run_id, name, content_type, size_bytes, data)
      values (${workspaceId}, ${run}, 'a', 'text/plain', 1, 'x'::bytea)`;
    await q`
      insert into usage_rollups (workspace_id, dimension, granularity, bucket_start, dimension_id, traces)
      values (${workspaceId}, 'project', 'hour', date_trunc('hour', now()) - ${`${i} hours`}::interval, ${project}, 1)`;
  }
}

/** Workspace ids of every row of `table` that `q` sees. */
async function visible(q: WorkspaceBound, table: string): Promise<string[]> {
  const rows = await q<
    { workspace_id: string }[]
  >`select workspace_id from ${q(table)} order by workspace_id`;
  return rows.map((r) => r.workspace_id);
}

/** What `run` fails with. */
async function failure(run: Promise<unknown>): Promise<unknown> {
  return run.then(
    () => {
      throw new Error("expected a failure");
    },
    (error: unknown) => error,
  );
}

beforeAll(async () => {
  a = await createTestWorkspace(db().sql);
  b = await createTestWorkspace(db().sql);
  await seed(unconfined(db().sql), a);
  await seed(unconfined(db().sql), b);
});

describe("a workspace scope", () => {
  it.each(ROW_LEVEL_SECURITY_TABLES)(
    "shows only its workspaces' rows of %s to SQL without a workspace condition",
    async (table) => {
      const sql = db().sql;
      const all = await visible(unconfined(sql), table);
      const of = (ids: string[]) => all.filter((w) => ids.includes(w));
      expect(of([a]).length).toBeGreaterThan(0);
      expect(of([b]).length).toBeGreaterThan(0);
      expect(await inWorkspaceScope(sql, [a], (q) => visible(q, table))).toEqual(of([a]));
      expect(await inWorkspaceScope(sql, [b], (q) => visible(q, table))).toEqual(of([b]));
      expect(await inWorkspaceScope(sql, [a, b], (q) => visible(q, table))).toEqual(of([a, b]));
      expect(await inWorkspaceScope(sql, [], (q) => visible(q, table))).toEqual([]);
    },
  );

  it("confines a misbound condition: an or() that escapes the workspace", async () => {
    const leaky = await inWorkspaceScope(
      db().sql,
      [a],
      (q) =>
        q<
          { workspace_id: string }[]
        >`select workspace_id from runs where workspace_id = ${a} and name = 'x' or true`,
    );
    expect(leaky.map((r) => r.workspace_id)).toEqual([a, a]);
  });

  it("refuses to write a row of another workspace", async () => {
    const error = await failure(
      inWorkspaceScope(
        db().sql,
        [a],
        (q) =>
          q`insert into tracing_projects (id, workspace_id, name) values (${uuidv7()}, ${b}, 'intruder')`,
      ),
    );
    expect(pgErrorCode(error)).toBe(INSUFFICIENT_PRIVILEGE);
    const moved = await failure(
      inWorkspaceScope(db().sql, [a], (q) => q`update runs set workspace_id = ${b}`),
    );
    expect(pgErrorCode(moved)).toBe(INSUFFICIENT_PRIVILEGE);
  });

  it("updates and deletes only its own rows, whatever the where clause", async () => {
    const counts = await inWorkspaceScope(db().sql, [a], async (q) => {
      const renamed = (await q`update runs set name = 'renamed'`).count;
      const deleted = (await q`delete from run_feedback`).count;
      throw Object.assign(new Error("roll back"), { renamed, deleted });
    }).catch((error: { renamed: number; deleted: number }) => error);
    expect([counts.renamed, counts.deleted]).toEqual([2, 2]);
    const owner = unconfined(db().sql);
    expect((await owner`select count(*)::int as n from runs where name = 'renamed'`)[0]?.n).toBe(0);
    expect((await owner`select count(*)::int as n from run_feedback`)[0]?.n).toBe(4);
  });

  it("reaches no other table, and no secret column of the tables the usage query labels with", async () => {
    for (const statement of [
      "select * from threads",
      "select key_hash from api_keys",
      "select * from store_items",
    ]) {
      const error = await failure(inWorkspaceScope(db().sql, [a], (q) => q.unsafe(statement)));
      expect(pgErrorCode(error), statement).toBe(INSUFFICIENT_PRIVILEGE);
    }
    const labels = await inWorkspaceScope(
      db().sql,
      [a],
      (q) => q`select display_name from workspaces where id = ${a}`,
    );
    expect(labels).toHaveLength(1);
  });

  it("ends with its transaction: the connection goes back to the pool as the owner, unscoped", async () => {
    const one: Sql = createSql(db().url, { max: 1, statementTimeoutMs: 0, applicationName: "rls-test" });
    try {
      const [before] = await one<{ user: string }[]>`select current_user as user`;
      expect(await inWorkspaceScope(one, [a], (q) => visible(q, "runs"))).toEqual([a, a]);
      await inWorkspaceScope(one, [a], async () => {
        throw new Error("rolled back");
      }).catch(() => undefined);
      const [after] = await one<{ user: string; scope: string | null }[]>`
        select current_user as user, current_setting('agentplane.workspace_ids', true) as scope`;
      expect(after).toEqual({ user: before?.user, scope: "" });
      expect(await visible(unconfined(one), "runs")).toEqual([a, a, b, b].sort());
    } finally {
      await one.end();
    }
  });

  it("plans once per connection only in a scope that asks for it, and for its transaction only", async () => {
    const one: Sql = createSql(db().url, { max: 1, statementTimeoutMs: 0, applicationName: "rls-test" });
    try {
      const mode = (q: WorkspaceBound) =>
        q<{ mode: string; rows: number }[]>`
          select current_setting('plan_cache_mode') as mode, (select count(*)::int from runs) as rows`;
      expect(await inWorkspaceScopeWithGenericPlans(one, [a], mode)).toEqual([
        { mode: "force_generic_plan", rows: 2 },
      ]);
      expect(await inWorkspaceScope(one, [a], mode)).toEqual([{ mode: "auto", rows: 2 }]);
      expect(await mode(unconfined(one))).toEqual([{ mode: "auto", rows: 4 }]);
    } finally {
      await one.end();
    }
  });

  it("fails closed when the scope cannot be set: the work's statements do not run", async () => {
    const error = await failure(inWorkspaceScope(db().sql, ["not-a-uuid"], (q) => q`select 1`));
    expect(pgErrorCode(error)).toBe("22P02");
  });
});

describe("the owner", () => {
  it("is not confined: purging a workspace removes its tracing rows by cascade, and only its", async () => {
    const c = await createTestWorkspace(db().sql);
    await seed(unconfined(db().sql), c);
    const [organization] = await db().sql<
      { id: string }[]
    >`select organization_id as id from workspaces where id = ${c}`;
    expect(await markWorkspaceDeleted(db().sql, organization?.id ?? "", c)).toBe(true);
    expect(await purgeDeletedWorkspace(db().sql, c)).toBe(true);
    for (const table of ROW_LEVEL_SECURITY_TABLES) {
      const [rows] = await db().sql<{ n: number }[]>`
        select count(*)::int as n from ${db().sql(table)} where workspace_id = ${c}`;
      expect(rows?.n, table).toBe(0);
      expect(new Set(await visible(unconfined(db().sql), table)), table).toEqual(new Set([a, b]));
    }
  });
});

describe("a database user that is not a superuser", () => {
  const role = `agentplane_owner_${randomBytes(4).toString("hex")}`;
  const password = randomBytes(12).toString("hex");
  const admin = () => postgres(inject("postgresAdminUrl"), { max: 1, onnotice: () => {} });
  const databases: { drop(): Promise<void> }[] = [];

  /** A fresh, empty database owned by the role, and a pool on it as the role. */
  async function ownedDatabase(): Promise<Sql> {
    const database = await createTestDatabase({ migrated: false });
    databases.push(database);
    const sql = admin();
    try {
      await sql`alter database ${sql(database.name)} owner to ${sql(role)}`;
    } finally {
      await sql.end();
    }
    const url = new URL(database.url);
    url.username = role;
    url.password = password;
    return createSql(url.toString(), { max: 2, statementTimeoutMs: 0, applicationName: "rls-test" });
  }

  beforeAll(async () => {
    const sql = admin();
    try {
      // A utility statement takes no parameters: format() quotes the name and password server-side.
      await sql`select set_config('agentplane_test.role', ${role}, false),
                       set_config('agentplane_test.password', ${password}, false)`;
      await sql`do $$ begin
        execute format('create role %I login password %L',
          current_setting('agentplane_test.role'), current_setting('agentplane_test.password'));
      end $$`;
    } finally {
      await sql.end();
    }
  });
  afterAll(async () => {
    for (const database of databases) await database.drop();
    const sql = admin();
    try {
      await sql`drop role if exists ${sql(role)}`;
    } finally {
      await sql.end();
    }
  });

  it("cannot migrate until it may switch to agentplane_tenant, and the error says how", async () => {
    const sql = await ownedDatabase();
    try {
      const error = (await failure(migrate(sql))) as Error & { cause?: { hint?: string } };
      expect(error.message).toContain(
        `agentplane needs the role agentplane_tenant, which ${role} may switch to`,
      );
      expect(error.cause?.hint).toContain(`grant agentplane_tenant to ${role}`);
    } finally {
      await sql.end();
    }
  });

  it("migrates once granted the role, and its scopes are confined while it, the owner, is not", async () => {
    const granting = admin();
    try {
      await granting`grant agentplane_tenant to ${granting(role)}`;
    } finally {
      await granting.end();
    }
    const sql = await ownedDatabase();
    try {
      await migrate(sql);
      const x = await createTestWorkspace(sql);
      const y = await createTestWorkspace(sql);
      await seed(unconfined(sql), x);
      await seed(unconfined(sql), y);
      expect(await inWorkspaceScope(sql, [x], (q) => visible(q, "runs"))).toEqual([x, x]);
      expect(await visible(unconfined(sql), "runs")).toEqual([x, x, y, y].sort());
    } finally {
      await sql.end();
    }
  });
});
