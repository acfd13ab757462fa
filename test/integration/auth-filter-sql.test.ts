/**
 * Custom auth filters against real Postgres: each operator selects exactly the rows it should
 * (authFilterSql), the batched thread lookup (filters as data, filterAlternatives) selects the same
 * rows as the filter as SQL text, and parseAuthFilter refuses what a handler may not return.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../../server/ids.js";
import {
  findVisibleThread,
  findVisibleThreads,
  insertThreads,
  searchThreads,
} from "../../server/store/agents/thread-store.js";
import {
  filterAlternatives,
  foldedContainment,
  MAX_FILTER_CONTAINMENTS,
} from "../../server/store/filters/auth-filter-alternatives.js";
import {
  type AuthFilter,
  authFilterSql,
  MAX_FILTER_BRANCHES,
  parseAuthFilter,
} from "../../server/store/filters/auth-filter-sql.js";
import { useTestDatabase } from "../support/database.js";
import { createTestWorkspace } from "../support/tenancy.js";

const db = useTestDatabase();

const rows: [number, Record<string, unknown>][] = [
  [1, { owner: "alice", tags: ["a", "b"], n: 1 }],
  [2, { owner: "bob", tags: ["b"], n: 2 }],
  [3, { owner: "alice", tags: "a", public: true }],
  [4, {}],
  [5, { owner: null, n: "1" }],
];

function parsed(raw: unknown): AuthFilter {
  const filter = parseAuthFilter(raw);
  if ("problem" in filter) throw new Error(filter.problem);
  return filter;
}

async function matching(raw: unknown): Promise<number[]> {
  const sql = db().sql;
  const source = sql.json(rows.map(([id, metadata]) => ({ id, metadata })) as never);
  const found = await sql<{ id: number }[]>`
    select t.id from jsonb_to_recordset(${source}) as t(id int, metadata jsonb)
    where ${authFilterSql(sql, "t.metadata", parsed(raw))}
    order by t.id`;
  return found.map((r) => r.id);
}

describe("authFilterSql", () => {
  it("matches a plain value and $eq by JSON equality, type included", async () => {
    expect(await matching({ owner: "alice" })).toEqual([1, 3]);
    expect(await matching({ owner: { $eq: "bob" } })).toEqual([2]);
    expect(await matching({ n: 1 })).toEqual([1]);
    expect(await matching({ n: "1" })).toEqual([5]);
    expect(await matching({ public: true })).toEqual([3]);
    expect(await matching({ owner: null })).toEqual([5]);
  });

  it("$contains needs an array holding every value", async () => {
    expect(await matching({ tags: { $contains: "a" } })).toEqual([1]);
    expect(await matching({ tags: { $contains: ["a", "b"] } })).toEqual([1]);
    expect(await matching({ tags: { $contains: "b" } })).toEqual([1, 2]);
  });

  it("combines several keys, $and and $or", async () => {
    expect(await matching({ owner: "alice", n: 1 })).toEqual([1]);
    expect(await matching({ $or: [{ owner: "bob" }, { public: true }] })).toEqual([2, 3]);
    expect(await matching({ $and: [{ owner: "alice" }, { $or: [{ n: 1 }, { public: true }] }] })).toEqual([
      1, 3,
    ]);
    expect(await matching({})).toEqual([1, 2, 3, 4, 5]);
  });

  it("keeps keys and values out of the SQL text (quotes cannot break out)", async () => {
    expect(await matching({ "owner') or true --": "x" })).toEqual([]);
    expect(await matching({ owner: "alice' or '1'='1" })).toEqual([]);
  });
});

describe("findVisibleThreads (filters as data, batched)", () => {
  /** Filters of every shape, including ones that expand into several alternatives. */
  const filters: unknown[] = [
    { owner: "alice" },
    { owner: { $eq: "bob" } },
    { n: 1 },
    { n: "1" },
    { owner: null },
    { tags: { $contains: "a" } },
    { tags: { $contains: ["a", "b"] } },
    { owner: "alice", n: 1 },
    { $or: [{ owner: "bob" }, { public: true }] },
    { $and: [{ owner: "alice" }, { $or: [{ n: 1 }, { public: true }] }] },
    {
      $and: [
        { $or: [{ owner: "alice" }, { owner: "bob" }] },
        { $or: [{ tags: { $contains: "b" } }, { n: "1" }] },
      ],
    },
    { $or: [{ $and: [{ owner: "bob" }, { n: 2 }] }, { $and: [{ tags: "a" }, { public: true }] }] },
    {},
  ];
  let workspaceId: string;
  let otherWorkspaceId: string;
  const ids: string[] = [];

  beforeAll(async () => {
    const sql = db().sql;
    workspaceId = await createTestWorkspace(sql);
    otherWorkspaceId = await createTestWorkspace(sql);
    for (const _ of rows) ids.push(uuidv7());
    await insertThreads(
      sql,
      rows.map(([, metadata], i) => ({
        workspaceId,
        threadId: ids[i] as string,
        metadata: metadata as never,
        ttl: null,
      })),
    );
  });

  it("answers every key, in one statement, exactly as the filter as SQL text does", async () => {
    const sql = db().sql;
    const lookups = filters.flatMap((raw) => {
      const filter = parsed(raw);
      const alternatives = filterAlternatives(filter);
      if (!alternatives) throw new Error(`${JSON.stringify(raw)} did not expand`);
      return ids.map((threadId) => ({ filter, key: { workspaceId, threadId, alternatives } }));
    });
    const batched = await findVisibleThreads(
      sql,
      lookups.map((l) => l.key),
    );
    const alone = await Promise.all(lookups.map((l) => findVisibleThread(sql, l.key, l.filter)));
    expect(batched.map((t) => t?.threadId ?? null)).toEqual(alone.map((t) => t?.threadId ?? null));
    // The filters do select: some lookups find their thread and some do not.
    expect(batched.filter((t) => t).length).toBeGreaterThan(0);
    expect(batched.filter((t) => !t).length).toBeGreaterThan(0);
  });

  it("finds nothing in another workspace, nor a thread that does not exist", async () => {
    const sql = db().sql;
    const alternatives = filterAlternatives(parsed({}));
    if (!alternatives) throw new Error("{} did not expand");
    const found = await findVisibleThreads(sql, [
      { workspaceId: otherWorkspaceId, threadId: ids[0] as string, alternatives },
      { workspaceId, threadId: uuidv7(), alternatives },
      { workspaceId, threadId: ids[0] as string, alternatives },
    ]);
    expect(found.map((t) => t?.threadId ?? null)).toEqual([null, null, ids[0]]);
  });

  it("searches alike whether the filter folds into the search's containment or not", async () => {
    const sql = db().sql;
    const searches: [Record<string, unknown> | undefined, unknown][] = [
      [undefined, { owner: "alice" }],
      [{ n: 1 }, { owner: "alice" }],
      [{ owner: "alice" }, { owner: "alice" }],
      [{ owner: "alice" }, { owner: "bob" }],
      [{ tags: ["b"] }, { tags: { $contains: "a" } }],
      [{ public: true }, { $or: [{ owner: "alice" }, { owner: "bob" }] }],
      [{}, { owner: "alice", tags: { $contains: "b" } }],
    ];
    for (const [metadata, raw] of searches) {
      const auth = parsed(raw);
      const expected = await sql<{ thread_id: string }[]>`
        select thread_id from threads where workspace_id = ${workspaceId}
          and metadata @> ${sql.json((metadata ?? {}) as never)} and (${authFilterSql(sql, "metadata", auth)})
        order by thread_id`;
      const found = await searchThreads(
        sql,
        workspaceId,
        { ...(metadata ? { metadata: metadata as never } : {}), auth },
        { sortBy: "thread_id", descending: false, limit: 100, offset: 0 },
      );
      expect(
        found.threads.map((t) => t.threadId),
        JSON.stringify([metadata, raw]),
      ).toEqual(expected.map((r) => r.thread_id));
      expect(found.total).toBe(expected.length);
    }
  });

  it("folds a plain conjunction with distinct keys, and nothing else", () => {
    expect(foldedContainment({ a: 1 }, parsed({ owner: "x", tags: { $contains: "t" } }))).toEqual({
      containment: { a: 1, owner: "x", tags: ["t"] },
      rest: undefined,
    });
    expect(foldedContainment(undefined, parsed({ owner: "x" }))).toEqual({
      containment: { owner: "x" },
      rest: undefined,
    });
    const or = parsed({ $or: [{ owner: "x" }, { public: true }] });
    expect(foldedContainment({ a: 1 }, or)).toEqual({ containment: { a: 1 }, rest: or });
    const twice = parsed({ owner: "x" });
    expect(foldedContainment({ owner: "y" }, twice)).toEqual({ containment: { owner: "y" }, rest: twice });
    const proto = foldedContainment(undefined, parsed({ ["__proto__"]: "x" })).containment;
    expect(Object.keys(proto ?? {})).toEqual(["__proto__"]);
  });

  it("leaves a filter that multiplies out too far to the SQL text form", () => {
    const branches = (key: string) => ({ $or: Array.from({ length: 10 }, (_, i) => ({ [key]: i })) });
    expect(filterAlternatives(parsed({ $and: [branches("a"), branches("b")] }))).toBeUndefined();
    const fits = filterAlternatives(parsed({ $and: [branches("a"), { owner: "x" }] }));
    expect(fits).toHaveLength(10);
    expect(fits?.flat().length).toBeLessThanOrEqual(MAX_FILTER_CONTAINMENTS);
  });
});

describe("parseAuthFilter", () => {
  const problem = (raw: unknown) => {
    const result = parseAuthFilter(raw);
    return "problem" in result ? result.problem : undefined;
  };

  it("refuses unknown operators, bad shapes and oversized $or/$and", () => {
    expect(problem({ owner: { $ne: "x" } })).toMatch(/unknown operator \$ne/);
    expect(problem({ $not: { owner: "x" } })).toMatch(/unknown operator \$not/);
    expect(problem({ owner: { $eq: "x", $contains: "y" } })).toMatch(/exactly one operator/);
    expect(problem({ owner: ["x"] })).toMatch(/filter\.owner must be a string, number, boolean or null/);
    expect(problem({ $or: [] })).toMatch(/1 to 10/);
    const many = Array.from({ length: MAX_FILTER_BRANCHES + 1 }, (_, i) => ({ owner: `u${i}` }));
    expect(problem({ $or: many })).toMatch(/array of 1 to 10 filter objects, got 11 entries/);
    expect(problem({ $and: "x" })).toMatch(/\$and must be an array/);
    expect(problem("owner")).toMatch(/must be an object/);
    let deep: unknown = { owner: "x" };
    for (let i = 0; i < 6; i++) deep = { $and: [deep] };
    expect(problem(deep)).toMatch(/nest 4 levels deep at most/);
    expect(problem({ tags: { $contains: [] } })).toMatch(/at least one value/);
  });
});
