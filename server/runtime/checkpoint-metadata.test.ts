import { describe, expect, it } from "vitest";
import { checkpointMetadataToStore, isStrippedMetadataKey } from "./checkpoint-metadata.js";

describe("isStrippedMetadataKey", () => {
  it.each([
    "langgraph_auth_user",
    "langgraph_auth_user_id",
    "LangGraph_Auth_Permissions",
    "x-request-id",
    "X-Api-Key",
    "x-tenant-id",
    "agentplane_request_id",
    "AgentplaneAuthUser",
    "request_id",
    "langgraph_request_id",
    "headers",
    "Authorization",
    "cookie",
    "user-agent",
  ])("drops %s", (key) => {
    expect(isStrippedMetadataKey(key)).toBe(true);
  });

  it.each([
    "source",
    "step",
    "parents",
    "writes",
    "run_id",
    "assistant_id",
    "graph_id",
    "user_id",
    "langgraph_version",
    "xray",
    "my_agentplane",
  ])("keeps %s", (key) => {
    expect(isStrippedMetadataKey(key)).toBe(false);
  });
});

describe("checkpointMetadataToStore", () => {
  const loop = { source: "loop" as const, step: 2, parents: { "": "cp-1" } };

  it("keeps LangGraph's metadata and adds the scalar run metadata", () => {
    const stored = checkpointMetadataToStore(loop, { run_id: "r1", attempt: 1, resumed: false });
    expect(stored).toEqual({ ...loop, run_id: "r1", attempt: 1, resumed: false });
  });

  it("drops auth users, headers, request ids and non-scalar run metadata", () => {
    const stored = checkpointMetadataToStore({ ...loop, langgraph_auth_user_id: "u-1" } as typeof loop, {
      run_id: "r1",
      "x-request-id": "req-1",
      agentplane_request_id: "req-2",
      langgraph_auth_user: "alice",
      request_id: "req-3",
      headers: "h",
      nested: { a: 1 },
      list: [1],
      nothing: null,
    });
    expect(stored).toEqual({ ...loop, run_id: "r1" });
  });

  it("lets LangGraph's own keys win over run metadata and skips its per-task bookkeeping", () => {
    const stored = checkpointMetadataToStore(loop, {
      step: 99,
      source: "update",
      langgraph_node: "agent",
      checkpoint_ns: "x",
      __pregel_internal: "y",
    });
    expect(stored).toEqual(loop);
  });

  it("never lets a key reach the prototype", () => {
    const fromLangGraph = JSON.parse(
      '{"source": "loop", "step": 1, "parents": {}, "__proto__": {"polluted": 1}}',
    );
    const stored = checkpointMetadataToStore(fromLangGraph, JSON.parse('{"__proto__": {"polluted": 2}}'));
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    expect(Object.hasOwn(stored, "__proto__")).toBe(true);
    expect((stored as Record<string, unknown>).polluted).toBeUndefined();
  });
});
