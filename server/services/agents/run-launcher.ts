import { fromJson, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { CreateRunRequestSchema } from "../../../gen/agentplane/agents/v1/run_service_pb.js";
import type { AgentRunRecord } from "../../store/agents/agent-run-store.js";
import type { AssistantRecord } from "../../store/agents/assistant-store.js";
import type { Principal } from "../iam/principal.js";
import { invalid } from "../request-validation.js";
import { resolveAssistant } from "./run-assistant.js";
import type { RunTarget } from "./run-authorization.js";
import { cancelRunsInTx } from "./run-cancel.js";
import { createRun } from "./run-creation.js";
import { parseRunRequest } from "./run-requests.js";
import { type RunServiceDeps, runCreationDepsOf } from "./run-service.js";
import { readRunStream, waitForRunEnd } from "./run-streams.js";

/** One event of a run's stream, as plain JSON. */
export interface RunEvent {
  readonly event: string;
  readonly data: JsonValue;
}

/**
 * Runs started by the protocol adapters that are not RPCs (A2A, MCP): the same creation, queueing,
 * waiting, streaming and cancelling as the run service, for a workspace the caller already
 * authorised. Bodies are run-create bodies as the REST API takes them, validated the same way.
 */
export interface RunLauncher {
  /**
   * The assistant `raw` names (a UUID or a graph id) in the workspace; NOT_FOUND otherwise, and when
   * `principal`'s custom auth hides it.
   */
  assistant(workspaceId: string, raw: string, principal: Principal): Promise<AssistantRecord>;
  /**
   * Creates a run from a run-create body (`assistant_id`, `input`, `command`, …) for `principal`
   * (whose custom auth handlers apply as for the run service).
   */
  start(
    workspaceId: string,
    target: RunTarget,
    body: JsonObject,
    headers: Headers,
    principal: Principal,
  ): Promise<AgentRunRecord>;
  /** Waits for the run to end; undefined when it was deleted. Rejects CANCELED when `signal` aborts. */
  waitForEnd(workspaceId: string, runId: string, signal: AbortSignal): Promise<AgentRunRecord | undefined>;
  /** The run's events from its first, as they are written, until it ends or `signal` aborts. */
  events(workspaceId: string, runId: string, signal: AbortSignal): AsyncGenerator<RunEvent>;
  /** Cancels the run (keeping its checkpoints); false when it had already ended. */
  cancel(workspaceId: string, runId: string): Promise<boolean>;
}

/** Creates a {@link RunLauncher} on the run service's dependencies. */
export function createRunLauncher(deps: RunServiceDeps): RunLauncher {
  const { sql, bus } = deps;
  const creationDeps = runCreationDepsOf(deps);
  const cancelDeps = creationDeps.cancel;
  const readers = { sql, bus };

  return {
    assistant: (workspaceId, raw, principal) => resolveAssistant(creationDeps, workspaceId, raw, principal),

    start(workspaceId, target, body, headers, principal) {
      let message: ReturnType<typeof fromJson<typeof CreateRunRequestSchema>>;
      try {
        message = fromJson(CreateRunRequestSchema, body);
      } catch (error) {
        throw invalid(error instanceof Error ? error.message : String(error));
      }
      const request = parseRunRequest(message, target.kind === "stateless");
      return createRun(creationDeps, { workspaceId, target, request, headers }, { principal }).then(
        (started) => started.run,
      );
    },

    waitForEnd: (workspaceId, runId, signal) => waitForRunEnd(readers, { workspaceId, runId }, signal),

    async *events(workspaceId, runId, signal) {
      const stream = readRunStream(
        readers,
        { workspaceId, runId },
        { afterSeq: 0, accept: () => true, signal },
      );
      for await (const message of stream)
        yield { event: message.event, data: message.data ? toJson(ValueSchema, message.data) : null };
    },

    async cancel(workspaceId, runId) {
      const outcomes = await sql.begin((tx) =>
        cancelRunsInTx(tx, cancelDeps, workspaceId, [runId], "interrupt"),
      );
      return outcomes.length > 0;
    },
  };
}
