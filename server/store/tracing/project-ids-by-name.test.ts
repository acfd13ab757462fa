import { describe, expect, it } from "vitest";
import { ProjectIdsByName } from "./project-ids-by-name.js";

const WORKSPACE = "0193c2a0-0000-7000-8000-000000000001";
const OTHER_WORKSPACE = "0193c2a0-0000-7000-8000-000000000002";

describe("ProjectIdsByName", () => {
  it("answers the ids of names only when every one is remembered, per workspace", () => {
    const ids = new ProjectIdsByName();
    ids.remember(
      WORKSPACE,
      new Map([
        ["a", "id-a"],
        ["b", "id-b"],
      ]),
    );
    expect(ids.lookup(WORKSPACE, ["b", "a"])).toEqual(
      new Map([
        ["b", "id-b"],
        ["a", "id-a"],
      ]),
    );
    expect(ids.lookup(WORKSPACE, ["a", "c"])).toBeUndefined();
    expect(ids.lookup(OTHER_WORKSPACE, ["a"])).toBeUndefined();
    expect(ids.lookup(WORKSPACE, [])).toEqual(new Map());
  });

  it("forgets the longest-remembered names beyond its capacity, and names it is told to", () => {
    const ids = new ProjectIdsByName(2);
    ids.remember(
      WORKSPACE,
      new Map([
        ["a", "id-a"],
        ["b", "id-b"],
      ]),
    );
    // Remembered again: now the most recent, so "b" goes first.
    ids.remember(WORKSPACE, new Map([["a", "id-a2"]]));
    ids.remember(WORKSPACE, new Map([["c", "id-c"]]));
    expect(ids.lookup(WORKSPACE, ["b"])).toBeUndefined();
    expect(ids.lookup(WORKSPACE, ["a", "c"])).toEqual(
      new Map([
        ["a", "id-a2"],
        ["c", "id-c"],
      ]),
    );
    ids.forget(WORKSPACE, ["c"]);
    expect(ids.lookup(WORKSPACE, ["c"])).toBeUndefined();
    expect(ids.lookup(WORKSPACE, ["a"])).toEqual(new Map([["a", "id-a2"]]));
  });
});
