/** A run request as the run service parses one, for tests that call run creation below the API. */
import type { RunRequest } from "../../server/services/agents/run-requests.js";

/**
 * A run request with every field at what a request naming only `assistant_id` and `input: {}` gets
 * (values stream, enqueue, delete on completion, no checkpoint, no delay), overridden by `fields`.
 */
export function testRunRequest(fields: Partial<RunRequest> = {}): RunRequest {
  return {
    assistantId: "",
    input: {},
    command: null,
    config: {},
    context: {},
    metadata: {},
    streamModes: ["values"],
    subgraphs: false,
    resumable: false,
    interruptBefore: null,
    interruptAfter: null,
    checkpoint: null,
    webhook: null,
    multitaskStrategy: "enqueue",
    ifNotExists: "reject",
    onCompletion: "delete",
    onDisconnect: "continue",
    afterSeconds: 0,
    durability: null,
    feedbackKeys: null,
    langsmithTracer: null,
    ...fields,
  };
}
