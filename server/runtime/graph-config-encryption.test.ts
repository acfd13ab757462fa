import { describe, expect, it } from "vitest";
import { parseGraphConfig } from "./graph-config.js";

const graphs = { agent: "./agent.ts:graph" };

describe("the graphs file's encryption section", () => {
  it("resolves encryption.path against the graphs file's folder, with its export", () => {
    const config = parseGraphConfig(
      { graphs, encryption: { path: "./encryption.ts:encryption" } },
      "/project/langgraph.json",
    );
    expect(config.encryption).toEqual({ file: "/project/encryption.ts", exportName: "encryption" });
    expect(
      parseGraphConfig({ graphs, encryption: { path: "./enc.ts" } }, "/project/langgraph.json").encryption,
    ).toEqual({ file: "/project/enc.ts", exportName: "default" });
  });

  it("refuses a section without a path, with unknown keys or a bad export, naming the key", () => {
    expect(() => parseGraphConfig({ graphs, encryption: {} }, "/p/langgraph.json")).toThrow(
      /encryption\.path: required/,
    );
    expect(() => parseGraphConfig({ graphs, encryption: "x" }, "/p/langgraph.json")).toThrow(
      /encryption: must be an object/,
    );
    expect(() =>
      parseGraphConfig({ graphs, encryption: { path: "./e.ts:e", keys: 1 } }, "/p/langgraph.json"),
    ).toThrow(/encryption\.keys: unknown key/);
    expect(() =>
      parseGraphConfig({ graphs, encryption: { path: "./e.ts:1x" } }, "/p/langgraph.json"),
    ).toThrow(/not a valid export name/);
  });
});
