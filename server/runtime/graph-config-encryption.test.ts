import { describe, expect, it } from "vitest";
import { parseGraphConfig } from "./graph-config.js";

describe("the graphs file's encryption section", () => {
  it("refuses custom encryption at start-up, naming the key and the built-in alternative", () => {
    expect(() =>
      parseGraphConfig(
        { graphs: { agent: "./agent.ts:graph" }, encryption: { path: "./encryption.ts:encryption" } },
        "/project/langgraph.json",
      ),
    ).toThrow(/encryption\.path: custom encryption is not supported.*AGENTPLANE_AES_KEY/);
  });
});
