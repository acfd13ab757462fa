import { describe, expect, it } from "vitest";
import { parseGraphConfig } from "./graph-config.js";

const file = "/srv/app/langgraph.json";
const graphs = { agent: "./agent.ts:graph" };

function problemsOf(auth: unknown): readonly string[] {
  try {
    parseGraphConfig({ graphs, auth }, file);
    return [];
  } catch (error) {
    return (error as { problems: readonly string[] }).problems;
  }
}

describe("the graphs file's auth section", () => {
  it("resolves auth.path against the graphs file and reads disable_studio_auth", () => {
    expect(parseGraphConfig({ graphs, auth: { path: "./auth.ts:auth" } }, file).auth).toEqual({
      file: "/srv/app/auth.ts",
      exportName: "auth",
      disableStudioAuth: false,
    });
    expect(
      parseGraphConfig({ graphs, auth: { path: "./src/auth.ts", disable_studio_auth: true } }, file).auth,
    ).toEqual({ file: "/srv/app/src/auth.ts", exportName: "default", disableStudioAuth: true });
    expect(parseGraphConfig({ graphs }, file).auth).toBeUndefined();
  });

  it("stops start-up on a bad value, naming the key and what to fix", () => {
    expect(problemsOf("./auth.ts")).toEqual([
      'auth: must be an object such as {"path": "./auth.ts:auth"}, got "./auth.ts"',
    ]);
    expect(problemsOf({})).toEqual(['auth.path: required, a string such as "./auth.ts:auth"']);
    expect(problemsOf({ path: "./auth.ts:1bad" })).toEqual([
      'auth.path: "1bad" is not a valid export name (in "./auth.ts:1bad")',
    ]);
    expect(problemsOf({ path: "./auth.ts:auth", disable_studio_auth: "yes" })).toEqual([
      'auth.disable_studio_auth: must be true or false, got "yes"',
    ]);
    expect(problemsOf({ path: "./auth.ts:auth", pathh: "x" })).toEqual([
      'auth.pathh: unknown key; auth takes "path" and "disable_studio_auth"',
    ]);
  });
});
