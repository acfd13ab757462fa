import { fileURLToPath } from "node:url";
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/**
 * The graphs file of the A2A and MCP tests: the bundled example `agent`, `approval` (asks with
 * `interrupt()`) and `sleepy` (long runs to cancel).
 */
export const AGENT_PROTOCOL_GRAPHS = fileURLToPath(
  new URL("../e2e/fixtures/runs-graphs/agent-protocols.json", import.meta.url),
);

/** `fetch` that sends `apiKey` in `x-api-key` (no header when null). */
export function fetchWithKey(apiKey: string | null): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    if (apiKey !== null) headers.set("x-api-key", apiKey);
    return fetch(input, { ...init, headers });
  };
}

/** An `@a2a-js/sdk` client of an assistant, built from its agent card as A2A clients discover agents. */
export function a2aClient(baseUrl: string, assistant: string, apiKey: string) {
  const fetchImpl = fetchWithKey(apiKey);
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  });
  return factory.createFromUrl(
    baseUrl,
    `/.well-known/agent-card.json?assistant_id=${encodeURIComponent(assistant)}`,
  );
}

/** A JSON-RPC request to `POST /a2a/{assistant}` with plain fetch: status and parsed body. */
export async function a2aRpc(
  baseUrl: string,
  assistant: string,
  apiKey: string | null,
  body: unknown,
  headers: Record<string, string> = {},
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON-RPC envelope came back
): Promise<{ status: number; body: any }> {
  const res = await fetchWithKey(apiKey)(`${baseUrl}/a2a/${assistant}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

/** An MCP client (the official SDK's) connected to the server's `/mcp` with `apiKey`. */
export async function mcpClient(baseUrl: string, apiKey: string | null): Promise<McpClient> {
  const client = new McpClient({ name: "agentplane-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", baseUrl), {
    requestInit: apiKey === null ? {} : { headers: { "x-api-key": apiKey } },
  });
  await client.connect(transport);
  return client;
}
