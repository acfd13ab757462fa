/**
 * MCP at `/mcp` through the official SDK's Client and StreamableHTTPClientTransport: every assistant
 * of the caller's workspace is a tool with its graph's input schema; calling one runs the assistant
 * and answers its output; errors come back as MCP errors or error results.
 */
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_PROTOCOL_GRAPHS, fetchWithKey, mcpClient } from "../support/agent-protocols.js";
import { waitFor } from "../support/runs-app.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;

beforeAll(async () => {
  // Reading schemas from TypeScript types takes tens of seconds on a loaded machine; the default
  // limit would give up on them (for good) while other test files compete for the cores.
  t = await startTestApp({ graphConfigPath: AGENT_PROTOCOL_GRAPHS, schemaResolveTimeoutMs: 240_000 });
});
afterAll(() => t?.stop());

describe("tools", () => {
  it("lists each assistant as a tool with its name, description and input schema", {
    timeout: 300_000,
  }, async () => {
    const created = await t.fetch("/assistants", {
      method: "POST",
      body: JSON.stringify({ graph_id: "agent", name: "Time Teller", description: "tells the time" }),
    });
    expect(created.status).toBe(200);
    const client = await mcpClient(t.baseUrl, t.adminKey);
    try {
      // A graph whose state is an Annotation gets its schema from its TypeScript types, which takes
      // a while the first time: lists answer a plain object schema until it is there.
      const { tools } = await waitFor(
        () => client.listTools(),
        (list) =>
          "sleep_ms" in (list.tools.find((tool) => tool.name === "sleepy")?.inputSchema.properties ?? {}),
        250_000,
      );
      expect(tools.map((tool) => tool.name)).toEqual([
        "agent",
        "approval",
        "sleepy",
        "failing",
        "Time_Teller",
      ]);
      const agent = tools.find((tool) => tool.name === "agent")!;
      expect(agent.description).toBe("the bundled example agent");
      expect(agent.inputSchema.type).toBe("object");
      expect(Object.keys(agent.inputSchema.properties ?? {})).toContain("messages");
      expect(tools.find((tool) => tool.name === "Time_Teller")?.description).toBe("tells the time");
      const sleepy = tools.find((tool) => tool.name === "sleepy")!;
      expect(sleepy.inputSchema.type).toBe("object");
      expect(Object.keys(sleepy.inputSchema.properties ?? {})).toEqual(
        expect.arrayContaining(["sleep_ms", "mark", "messages"]),
      );
    } finally {
      await client.close();
    }
  });

  it("calls a tool: the assistant runs on the arguments and its answer comes back", async () => {
    const client = await mcpClient(t.baseUrl, t.adminKey);
    try {
      const result = await client.callTool({
        name: "agent",
        arguments: { messages: [{ role: "human", content: "what time is it?" }] },
      });
      expect(result.isError).toBeFalsy();
      const content = result.content as { type: string; text: string }[];
      expect(content).toHaveLength(1);
      expect(content[0]?.text).toMatch(/^The time is \d{4}-/);
      const messages = (result.structuredContent as { messages: { type: string }[] }).messages;
      expect(messages.map((m) => m.type)).toEqual(["human", "ai", "tool", "ai"]);

      const slept = await client.callTool({ name: "sleepy", arguments: { sleep_ms: 5 } });
      expect(slept.structuredContent).toMatchObject({ sleep_ms: 5, messages: ["slept 5 ms"] });
      expect(JSON.parse((slept.content as { text: string }[])[0]!.text)).toMatchObject({ sleep_ms: 5 });
    } finally {
      await client.close();
    }
  });

  it("leaves no thread behind: a tool call is a stateless run", async () => {
    const before = (await (await t.fetch("/threads/search", { method: "POST", body: "{}" })).json()).length;
    const client = await mcpClient(t.baseUrl, t.adminKey);
    try {
      await client.callTool({ name: "sleepy", arguments: { sleep_ms: 1 } });
    } finally {
      await client.close();
    }
    const after = (await (await t.fetch("/threads/search", { method: "POST", body: "{}" })).json()).length;
    expect(after).toBe(before);
  });
});

describe("errors", () => {
  it("an unknown tool is an MCP error naming the tools", async () => {
    const client = await mcpClient(t.baseUrl, t.adminKey);
    try {
      const error = await client.callTool({ name: "nope", arguments: {} }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(-32602);
      expect((error as McpError).message).toMatch(
        /tool "nope" not found; this workspace's tools: agent, approval/,
      );
    } finally {
      await client.close();
    }
  });

  it("a run that fails is an error result with its message", async () => {
    const client = await mcpClient(t.baseUrl, t.adminKey);
    try {
      const result = await client.callTool({ name: "failing", arguments: { value: "x" } });
      expect(result.isError).toBe(true);
      expect(result.content).toEqual([{ type: "text", text: "CustomError: Boo!" }]);
    } finally {
      await client.close();
    }
  });

  it("answers 401 without a key, and 405 to GET and DELETE", async () => {
    await expect(mcpClient(t.baseUrl, null)).rejects.toThrow(/401|API key/);
    const raw = await fetchWithKey(null)(`${t.baseUrl}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(raw.status).toBe(401);
    expect((await raw.json()).detail).toMatch(/API key/);
    for (const method of ["GET", "DELETE"]) {
      const res = await t.fetch("/mcp", { method });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
    }
  });

  it("refuses a request that does not accept both JSON and event streams, as the transport requires", async () => {
    const res = await t.fetch("/mcp", {
      method: "POST",
      headers: { accept: "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(406);
  });
});
