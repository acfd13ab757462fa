/**
 * Custom auth filters against real Postgres: each operator selects exactly the rows it should
 * (authFilterSql), and parseAuthFilter refuses what a handler may not return.
 */
import { describe, expect, it } from "vitest";
import {
  type AuthFilter,
  authFilterSql,
  MAX_FILTER_BRANCHES,
  parseAuthFilter,
} from "../../server/store/auth-filter-sql.js";
import { useTestDatabase } from "../support/database.js";

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
