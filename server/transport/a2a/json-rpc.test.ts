import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { A2aError } from "../../services/agents/a2a-protocol.js";
import { JsonRpcFailure, jsonRpcErrorOf, parseJsonRpcRequest } from "./json-rpc.js";

function failure(body: unknown): { id: unknown; code: number } {
  try {
    parseJsonRpcRequest(body as never);
  } catch (error) {
    if (error instanceof JsonRpcFailure) return { id: error.id, code: error.error.code };
    throw error;
  }
  throw new Error("parsed");
}

describe("parseJsonRpcRequest", () => {
  it("takes a request with a string, number or null id", () => {
    expect(parseJsonRpcRequest({ jsonrpc: "2.0", id: "a", method: "m", params: { x: 1 } })).toEqual({
      id: "a",
      method: "m",
      params: { x: 1 },
    });
    expect(parseJsonRpcRequest({ jsonrpc: "2.0", id: 3, method: "m" }).params).toBeUndefined();
    expect(parseJsonRpcRequest({ jsonrpc: "2.0", id: null, method: "m" }).id).toBeNull();
  });

  it("refuses batches, notifications and malformed requests as invalid requests, keeping a readable id", () => {
    expect(failure([])).toEqual({ id: null, code: -32600 });
    expect(failure("x")).toEqual({ id: null, code: -32600 });
    expect(failure(undefined)).toEqual({ id: null, code: -32600 });
    expect(failure({ jsonrpc: "2.0", method: "m" })).toEqual({ id: null, code: -32600 });
    expect(failure({ jsonrpc: "2.0", id: { a: 1 }, method: "m" })).toEqual({ id: null, code: -32600 });
    expect(failure({ jsonrpc: "1.0", id: 7, method: "m" })).toEqual({ id: 7, code: -32600 });
    expect(failure({ jsonrpc: "2.0", id: "q", method: 5 })).toEqual({ id: "q", code: -32600 });
  });
});

describe("jsonRpcErrorOf", () => {
  it("maps refused runs to invalid params, server refusals to internal errors, and leaves bugs to HTTP", () => {
    expect(jsonRpcErrorOf(new ConnectError("bad", Code.InvalidArgument))).toMatchObject({
      code: -32602,
      message: "bad",
    });
    expect(jsonRpcErrorOf(new ConnectError("busy", Code.AlreadyExists))?.code).toBe(-32602);
    expect(jsonRpcErrorOf(new ConnectError("retry", Code.Aborted))?.code).toBe(-32603);
    expect(jsonRpcErrorOf(new ConnectError("down", Code.Unavailable))).toBeUndefined();
    expect(jsonRpcErrorOf(new Error("bug"))).toBeUndefined();
    const own = new A2aError(-32001, "gone");
    expect(jsonRpcErrorOf(own)).toBe(own);
  });
});
