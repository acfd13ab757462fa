/**
 * MCP at `/mcp` (Streamable HTTP, stateless: every POST is answered on its own, no session is
 * kept), served by the official `@modelcontextprotocol/sdk` server. Each assistant of the caller's
 * workspace is a tool; calling one runs the assistant and answers its output. The API key and
 * workspace rules are those of every route (401, 403 as `{"detail"}`). `tools/call` takes the run's
 * `context` beside `arguments`, as the Agent Server does. GET has no server-initiated
 * stream to offer and answers 405, as DELETE does (there is no session to end).
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../logger.js";
import type { AssistantTools } from "../../services/agents/assistant-tools.js";
import type { Authenticator } from "../../services/iam/authenticator.js";
import { authorizedWorkspace } from "../../services/iam/principal.js";
import { readJsonBody } from "../body/json-body.js";
import { type AdapterRoute, bindAdapter, type HttpAdapter } from "../http-adapter.js";
import { clientGone, requestHeaders, requestTarget } from "../request-headers.js";
import type { NodeServerResponse } from "../rest/node-types.js";

/** The MCP endpoint. */
export const MCP_PATH = "/mcp";

/** The MCP route. */
export const MCP_ROUTES = [{ methods: ["POST"], path: MCP_PATH }] as const satisfies readonly AdapterRoute[];

/** Dependencies of {@link createMcpAdapter}. */
export interface McpAdapterDeps {
  auth: Authenticator;
  tools: AssistantTools;
  /** agentplane's version, which the server reports at initialisation. */
  version: string;
  log: Logger;
}

/**
 * The MCP error of a failure in a handler. A `ConnectError` is written for callers and keeps its
 * message; anything else (a bug, an outage) is logged and answered without detail.
 */
function mcpErrorOf(error: unknown, log: Logger): McpError {
  if (error instanceof McpError) return error;
  if (error instanceof ConnectError) {
    const code =
      error.code === Code.InvalidArgument ||
      error.code === Code.NotFound ||
      error.code === Code.FailedPrecondition
        ? ErrorCode.InvalidParams
        : error.code === Code.PermissionDenied
          ? ErrorCode.InvalidRequest
          : ErrorCode.InternalError;
    return new McpError(code, error.rawMessage);
  }
  log.error("MCP request failed", { error });
  return new McpError(ErrorCode.InternalError, "internal error");
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The `context` of each `tools/call` in the body, by JSON-RPC id: the Agent Server's extension of
 * the call's params (the graph's run context), which the SDK's schema does not keep, so it is read
 * from the request as sent.
 */
function toolCallContexts(body: JsonValue | undefined): Map<string | number, JsonValue> {
  const contexts = new Map<string | number, JsonValue>();
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!isJsonObject(message) || message.method !== "tools/call" || !isJsonObject(message.params)) continue;
    const { id } = message;
    const context = message.params.context;
    if ((typeof id === "string" || typeof id === "number") && context !== undefined && context !== null)
      contexts.set(id, context);
  }
  return contexts;
}

/** Writes a web `Response` (what the SDK's transport answers) to the Node response. */
async function writeResponse(res: NodeServerResponse, response: Response): Promise<void> {
  const body = response.body ? Buffer.from(await response.arrayBuffer()) : undefined;
  if (res.headersSent || res.destroyed) return;
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (body) res.end(body);
  else res.end();
}

/** Creates the MCP adapter. */
export function createMcpAdapter(deps: McpAdapterDeps): HttpAdapter {
  const { auth, tools, log } = deps;
  return bindAdapter(MCP_ROUTES, {
    [MCP_PATH]: async (req, res) => {
      const headers = requestHeaders(req);
      const principal = await auth.authenticate(headers, requestTarget(req));
      const workspace = await authorizedWorkspace(principal, "assistants:read");
      const body = await readJsonBody(req);
      const contexts = toolCallContexts(body);
      const gone = clientGone(res);

      const server = new Server(
        { name: "agentplane", version: deps.version },
        { capabilities: { tools: {} } },
      );
      server.setRequestHandler(ListToolsRequestSchema, async () => {
        try {
          const listed = await tools.list(workspace.id, principal);
          return {
            tools: listed.map((tool) => ({
              name: tool.name,
              description: tool.description,
              inputSchema: tool.inputSchema,
            })),
          };
        } catch (error) {
          throw mcpErrorOf(error, log);
        }
      });
      server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
        try {
          const context = contexts.get(extra.requestId);
          if (context !== undefined && !isJsonObject(context))
            throw new McpError(
              ErrorCode.InvalidParams,
              'context must be a JSON object: the run context of the assistant\'s graph, such as {"user_id": "u1"}',
            );
          await authorizedWorkspace(principal, "threads:write");
          const outcome = await tools.call(
            workspace.id,
            request.params.name,
            // Arguments arrived as JSON in a body the input screen passed: plain JSON values.
            (request.params.arguments ?? {}) as JsonObject,
            headers,
            AbortSignal.any([gone, extra.signal]),
            principal,
            context,
          );
          if (!outcome.ok) return { content: [{ type: "text", text: outcome.text }], isError: true };
          const structured =
            typeof outcome.output === "object" && outcome.output !== null && !Array.isArray(outcome.output)
              ? { structuredContent: outcome.output }
              : {};
          return { content: [{ type: "text", text: outcome.text }], ...structured };
        } catch (error) {
          throw mcpErrorOf(error, log);
        }
      });

      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      await server.connect(transport);
      try {
        const request = new Request(`http://agentplane${MCP_PATH}`, { method: "POST", headers });
        await writeResponse(res, await transport.handleRequest(request, { parsedBody: body }));
      } finally {
        await server.close();
      }
    },
  });
}
