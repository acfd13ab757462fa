/**
 * The A2A endpoints (Agent2Agent protocol 1.0 and 0.3.0, JSON-RPC 2.0 over HTTP), one agent per
 * assistant; a request's method name picks the version it is answered in (a2a-v1-wire.ts):
 *
 * - `GET /.well-known/agent-card.json?assistant_id=…`: the assistant's agent card
 * - `POST /a2a/{assistant_id}`: `SendMessage` / `message/send`, `SendStreamingMessage` /
 *   `message/stream` and `SubscribeToTask` / `tasks/resubscribe` (Server-Sent Events of JSON-RPC
 *   responses; they need `Accept: text/event-stream`), `GetTask` / `tasks/get`, `CancelTask` /
 *   `tasks/cancel`, `ListTasks`, `GetExtendedAgentCard` / `agent/getAuthenticatedExtendedCard`;
 *   `historyScope` (or the `LangGraph-A2A-History-Scope` header) chooses the history
 *
 * The API key and workspace rules are those of every route: no key is 401, an assistant of another
 * workspace 404, a missing permission 403, all as `{"detail"}`. Once the request is a JSON-RPC
 * request, what goes wrong is a JSON-RPC error (HTTP 200).
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "../../logger.js";
import {
  A2A_ERRORS,
  A2aError,
  type A2aTask,
  HISTORY_SCOPE_HEADER,
  type HistoryScope,
  historyScope,
  parseListParams,
  parseSendParams,
  parseTaskParams,
  type StreamResult,
} from "../../services/agents/a2a-protocol.js";
import type { A2aCaller, A2aService } from "../../services/agents/a2a-service.js";
import {
  sendParamsFromV1,
  stateOfV1Name,
  streamResultToV1,
  taskToV1,
  V1_METHODS,
  V1_ONLY_METHODS,
  V1_PUSH_METHODS,
} from "../../services/agents/a2a-v1-wire.js";
import type { RunLauncher } from "../../services/agents/run-launcher.js";
import type { Authenticator } from "../../services/iam/authenticator.js";
import type { WorkspacePermission } from "../../services/iam/permissions.js";
import { authorizedWorkspace, type Principal } from "../../services/iam/principal.js";
import type { AssistantRecord } from "../../store/agents/assistant-store.js";
import { readJsonBody } from "../body/json-body.js";
import type { IgnoredFieldsSink } from "../field-leniency.js";
import { type AdapterRoute, bindAdapter, type HttpAdapter } from "../http-adapter.js";
import { clientGone, requestHeaders, requestOrigin, requestTarget } from "../request-headers.js";
import { restErrorStatus } from "../rest/http-status.js";
import type { NodeServerResponse } from "../rest/node-types.js";
import { parseQuery } from "../rest/query-string.js";
import { defaultHeartbeatMs, writeSse } from "../rest/sse-writer.js";
import {
  errorResponse,
  JsonRpcFailure,
  type JsonRpcId,
  type JsonRpcResponse,
  jsonRpcErrorOf,
  parseJsonRpcRequest,
  resultResponse,
} from "./json-rpc.js";

/** Where an assistant's agent card is served (the A2A well-known path), with `?assistant_id=`. */
export const AGENT_CARD_PATH = "/.well-known/agent-card.json";

/** The A2A routes. */
export const A2A_ROUTES = [
  { methods: ["GET"], path: AGENT_CARD_PATH },
  { methods: ["POST"], path: "/a2a/{assistant_id}" },
] as const satisfies readonly AdapterRoute[];

/** Dependencies of {@link createA2aAdapter}. */
export interface A2aAdapterDeps {
  auth: Authenticator;
  a2a: A2aService;
  launcher: Pick<RunLauncher, "assistant">;
  log: Logger;
  /** Where ignored request members go (the agent card's unknown query parameters). */
  ignoredFields?: IgnoredFieldsSink;
}

/** The permission each method needs in the workspace (0.3 names; 1.0 names map onto them). */
const METHOD_PERMISSIONS: Readonly<Record<string, WorkspacePermission>> = {
  "message/send": "threads:write",
  "message/stream": "threads:write",
  "tasks/get": "threads:read",
  "tasks/cancel": "threads:write",
  "tasks/resubscribe": "threads:read",
  "agent/getAuthenticatedExtendedCard": "assistants:read",
  ListTasks: "threads:read",
};

/** Methods answered with Server-Sent Events. */
const STREAMING_METHODS = new Set(["message/stream", "tasks/resubscribe"]);

/** Methods of the protocol this agent does not offer, and the error each answers. */
const UNSUPPORTED: Readonly<Record<string, A2aError>> = Object.fromEntries(
  [
    ...["set", "get", "list", "delete"].map((verb) => `tasks/pushNotificationConfig/${verb}`),
    ...V1_PUSH_METHODS,
  ].map((method) => [
    method,
    new A2aError(A2A_ERRORS.pushNotificationNotSupported, "push notifications are not supported"),
  ]),
);

/** Every method name this agent answers, for the error naming them. */
const ANSWERED = [...Object.keys(METHOD_PERMISSIONS), ...Object.keys(V1_METHODS)];

/**
 * The protocol version a request speaks (by its method's name, as the Agent Server decides it: a
 * 1.0 name is answered in 1.0's shapes), and the 0.3 method it is.
 */
function dialectOf(method: string): { v1: boolean; method: string } {
  const mapped = V1_METHODS[method];
  return mapped ? { v1: true, method: mapped } : { v1: V1_ONLY_METHODS.has(method), method };
}

/** The history scope a request names: its own (in its params), else the header's. */
function scopedBy<T extends { historyScope: HistoryScope | undefined }>(params: T, headers: Headers): T {
  if (params.historyScope !== undefined) return params;
  return {
    ...params,
    historyScope: historyScope(headers.get(HISTORY_SCOPE_HEADER) ?? undefined, HISTORY_SCOPE_HEADER),
  };
}

function sendJson(res: NodeServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** The caller's workspace with the permission, and the assistant the path or query names. */
async function target(
  deps: A2aAdapterDeps,
  principal: Principal,
  permission: WorkspacePermission,
  rawAssistant: string | undefined,
): Promise<{ workspaceId: string; assistant: AssistantRecord }> {
  const workspace = await authorizedWorkspace(principal, permission);
  if (rawAssistant === undefined || rawAssistant === "")
    throw new ConnectError(
      "assistant_id is required: the query parameter ?assistant_id= with an assistant's UUID or a graph id",
      Code.InvalidArgument,
    );
  return {
    workspaceId: workspace.id,
    assistant: await deps.launcher.assistant(workspace.id, rawAssistant, principal),
  };
}

/** Errors answered over HTTP rather than JSON-RPC: the caller may not act in the workspace. */
function refusedOutright(error: unknown): boolean {
  return (
    error instanceof ConnectError &&
    (error.code === Code.PermissionDenied || error.code === Code.Unauthenticated)
  );
}

/** `events`, each translated by `map`. */
async function* mapEvents<T, U>(events: AsyncIterable<T>, map: (event: T) => U): AsyncGenerator<U> {
  for await (const event of events) yield map(event);
}

/** Events that end at once with a JSON-RPC error. */
// biome-ignore lint/correctness/useYield: a stream whose only content is its error
async function* failingWith(error: A2aError): AsyncGenerator<never> {
  throw error;
}

/** Creates the A2A adapter. */
export function createA2aAdapter(deps: A2aAdapterDeps): HttpAdapter {
  const { a2a } = deps;

  const streamTo = async (
    res: NodeServerResponse,
    id: JsonRpcId,
    events: AsyncIterable<unknown>,
    stop: AbortSignal,
  ): Promise<void> => {
    async function* envelopes(): AsyncGenerator<JsonRpcResponse> {
      try {
        for await (const event of events) yield resultResponse(id, event);
      } catch (error) {
        const known = jsonRpcErrorOf(error);
        if (!known) throw error;
        yield errorResponse(id, known);
      }
    }
    await writeSse(res, envelopes(), (message) => `data: ${JSON.stringify(message)}\n\n`, {
      heartbeatMs: defaultHeartbeatMs,
      stop,
      headers: () => ({}),
      toError: (error) => {
        if (error instanceof ConnectError) return error;
        deps.log.error("A2A stream failed", { error });
        return new ConnectError("internal error", Code.Internal);
      },
    });
  };

  return bindAdapter(A2A_ROUTES, {
    [AGENT_CARD_PATH]: async (req, res, { query }) => {
      const principal = await deps.auth.authenticate(requestHeaders(req), requestTarget(req));
      const all = parseQuery(query);
      // Other parameters are a newer client's: ignored and counted (field-leniency.ts).
      const ignored = all.filter(([name]) => name !== "assistant_id").map(([name]) => name);
      if (ignored.length > 0) deps.ignoredFields?.("a2a", ignored);
      const params = all.filter(([name]) => name === "assistant_id");
      if (params.length > 1)
        throw new ConnectError(
          'query parameter "assistant_id" is given more than once',
          Code.InvalidArgument,
        );
      const { assistant } = await target(deps, principal, "assistants:read", params[0]?.[1]);
      sendJson(res, 200, a2a.agentCard(assistant, requestOrigin(req)));
    },

    "/a2a/{assistant_id}": async (req, res, { vars }) => {
      const headers = requestHeaders(req);
      const principal = await deps.auth.authenticate(headers, requestTarget(req));
      const { workspaceId, assistant } = await target(deps, principal, "assistants:read", vars.assistant_id);
      let id: JsonRpcId = null;
      // A stream request that fails before its first event gets its error as a one-event stream,
      // which is what a streaming client reads.
      let streaming = false;
      try {
        let body: JsonValue | undefined;
        try {
          body = await readJsonBody(req);
        } catch (error) {
          if (error instanceof ConnectError && restErrorStatus(error) === 400)
            throw new JsonRpcFailure(null, new A2aError(A2A_ERRORS.parseError, error.rawMessage));
          throw error;
        }
        const request = parseJsonRpcRequest(body);
        id = request.id;
        const unsupported = UNSUPPORTED[request.method];
        if (unsupported) throw unsupported;
        const { v1, method } = dialectOf(request.method);
        if (STREAMING_METHODS.has(method)) {
          if (!(headers.get("accept") ?? "").includes("text/event-stream"))
            throw new A2aError(
              A2A_ERRORS.invalidRequest,
              `${request.method} answers with Server-Sent Events: send Accept: text/event-stream`,
            );
          streaming = true;
        }
        const permission = METHOD_PERMISSIONS[method];
        if (!permission)
          throw new A2aError(
            A2A_ERRORS.methodNotFound,
            `method "${request.method}" not found; this agent answers ${ANSWERED.join(", ")}`,
          );
        await authorizedWorkspace(principal, permission);
        const caller: A2aCaller = { workspaceId, principal, headers, signal: clientGone(res) };
        const answer = (result: unknown) => sendJson(res, 200, resultResponse(id, result));
        const task = (t: A2aTask) => (v1 ? taskToV1(t) : t);
        const sendParams = () =>
          scopedBy(parseSendParams(v1 ? sendParamsFromV1(request.params) : request.params), headers);
        const taskParams = () => scopedBy(parseTaskParams(request.params), headers);
        const events = (stream: AsyncIterable<StreamResult>) =>
          v1 ? mapEvents(stream, streamResultToV1) : stream;
        switch (method) {
          case "message/send": {
            const sent = task(await a2a.send(caller, assistant, sendParams()));
            answer(v1 ? { task: sent } : sent);
            return;
          }
          case "message/stream": {
            const params = sendParams();
            if (params.historyScope === "task")
              throw new A2aError(
                A2A_ERRORS.invalidParams,
                'historyScope "task" is not available when streaming: a stream has no final task-scoped snapshot',
              );
            await streamTo(res, id, events(await a2a.stream(caller, assistant, params)), caller.signal);
            return;
          }
          case "tasks/resubscribe":
            await streamTo(
              res,
              id,
              events(await a2a.resubscribe(caller, assistant, taskParams())),
              caller.signal,
            );
            return;
          case "tasks/get":
            answer(task(await a2a.getTask(caller, assistant, taskParams())));
            return;
          case "tasks/cancel":
            answer(task(await a2a.cancelTask(caller, assistant, taskParams())));
            return;
          case "agent/getAuthenticatedExtendedCard":
            // The caller is authenticated already; the card it gets is the public one.
            answer(a2a.agentCard(assistant, requestOrigin(req)));
            return;
          case "ListTasks": {
            const params = scopedBy(parseListParams(request.params, stateOfV1Name), headers);
            const page = await a2a.listTasks(caller, assistant, params);
            answer({
              tasks: page.tasks.map(taskToV1),
              nextPageToken: page.nextOffset === undefined ? "" : String(page.nextOffset),
              pageSize: params.pageSize,
              totalSize: page.total,
            });
            return;
          }
        }
      } catch (error) {
        const failure =
          error instanceof JsonRpcFailure
            ? { id: error.id, error: error.error }
            : refusedOutright(error)
              ? undefined
              : { id, error: jsonRpcErrorOf(error) };
        if (!failure?.error) throw error;
        if (streaming && !res.headersSent)
          await streamTo(res, failure.id, failingWith(failure.error), clientGone(res));
        else sendJson(res, 200, errorResponse(failure.id, failure.error));
      }
    },
  });
}
