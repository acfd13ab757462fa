import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { GraphRegistry } from "../../runtime/graph-registry.js";
import type { AgentRunRecord } from "../../store/agents/agent-run-store.js";
import { type AssistantRecord, searchAssistants } from "../../store/agents/assistant-store.js";
import type { Sql } from "../../store/db.js";
import type { Principal } from "../iam/principal.js";
import { latestAgentText } from "./a2a-tasks.js";
import { assistantVisibility } from "./assistant-access.js";
import type { AssistantInputSchemas } from "./assistant-input-schemas.js";
import type { RunLauncher } from "./run-launcher.js";
import type { SystemAssistants } from "./system-assistants.js";

/**
 * Tools a workspace lists at most: the MCP tool list is one page, and a client hands every tool to
 * a model, for which hundreds are already too many.
 */
export const MAX_TOOLS = 500;
/**
 * Longest a tool list waits for a graph's input schema. A schema read from TypeScript types takes
 * seconds the first time (a compiler in a worker thread); the list answers a plain object schema
 * meanwhile, and the derivation goes on, so a later list has it.
 */
const SCHEMA_WAIT_MS = 2_000;
/** The longest tool name MCP clients accept, and the characters they allow. */
const MAX_NAME_LENGTH = 64;
const NAME_CHARACTER = /[^A-Za-z0-9_-]/g;

/** An assistant as an MCP tool. */
export interface AssistantTool {
  /** The assistant's name made a valid tool name, unique in the workspace. */
  readonly name: string;
  readonly description: string;
  /** The JSON Schema of the graph's input (an object schema). */
  readonly inputSchema: JsonObject & { type: "object" };
  readonly assistant: AssistantRecord;
}

/** What a tool call gave: the run's final values and a text of them, or why it failed. */
export type ToolOutcome =
  | { readonly ok: true; readonly output: JsonValue; readonly text: string }
  | { readonly ok: false; readonly text: string };

/** Dependencies of {@link createAssistantTools}. */
export interface AssistantToolsDeps {
  sql: Sql;
  graphs: GraphRegistry;
  systemAssistants: SystemAssistants;
  launcher: RunLauncher;
  inputSchemas: AssistantInputSchemas;
}

/** A workspace's assistants as tools, and calling them (a stateless run, waited for). */
export interface AssistantTools {
  /** The workspace's assistants `principal` may see (custom auth's `assistants:search`), oldest first, as tools. */
  list(workspaceId: string, principal: Principal): Promise<AssistantTool[]>;
  /**
   * Runs the tool's assistant on `args` as its input and waits for the run; a client that goes away
   * (`signal`) cancels it. NOT_FOUND for an unknown tool.
   */
  call(
    workspaceId: string,
    name: string,
    args: JsonObject,
    headers: Headers,
    signal: AbortSignal,
    principal: Principal,
    /** The run's context (the graph's context schema), as `tools/call` gives it; none when undefined. */
    context?: JsonObject,
  ): Promise<ToolOutcome>;
}

/** A schema a tool can declare: the graph's input schema when it describes an object. */
function objectSchema(schema: JsonObject | undefined): JsonObject & { type: "object" } {
  if (schema && schema.type === "object") return schema as JsonObject & { type: "object" };
  return { type: "object" };
}

/** The schema, if it is there within `ms`; undefined when it is late or cannot be derived. */
function schemaWithin(schema: Promise<JsonObject | undefined>, ms: number): Promise<JsonObject | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    const settle = (value: JsonObject | undefined) => {
      clearTimeout(timer);
      resolve(value);
    };
    schema.then(settle, () => settle(undefined));
  });
}

/** Tool names for assistants, in order: the name made valid, the assistant id added on a clash. */
function toolNames(assistants: readonly AssistantRecord[]): string[] {
  const taken = new Set<string>();
  return assistants.map((assistant) => {
    const base = assistant.name.replace(NAME_CHARACTER, "_").slice(0, MAX_NAME_LENGTH) || "assistant";
    const id = assistant.assistantId.replace(/-/g, "");
    const name = taken.has(base) ? `${base.slice(0, MAX_NAME_LENGTH - id.length - 1)}_${id}` : base;
    taken.add(name);
    return name;
  });
}

function outcomeOf(run: AgentRunRecord | undefined): ToolOutcome {
  if (!run) return { ok: false, text: "the run was deleted before it ended" };
  if (run.status === "success") {
    const output = run.output ?? {};
    return { ok: true, output, text: latestAgentText(output)?.text ?? JSON.stringify(output) };
  }
  if (run.status === "interrupted") return { ok: false, text: "the run was cancelled" };
  const failure = (run.output as { __error__?: { error?: string; message?: string } } | null)?.__error__;
  return {
    ok: false,
    text: failure?.message
      ? `${failure.error ?? "Error"}: ${failure.message}`
      : `the run ended with status ${run.status}`,
  };
}

/** Creates the {@link AssistantTools}. */
export function createAssistantTools(deps: AssistantToolsDeps): AssistantTools {
  const { sql, launcher } = deps;

  /** The workspace's assistants with their tool names. */
  const named = async (
    workspaceId: string,
    principal: Principal,
  ): Promise<{ name: string; assistant: AssistantRecord }[]> => {
    await deps.systemAssistants.ensure(workspaceId);
    const visible = await assistantVisibility(principal, deps.systemAssistants, "assistants:search", {
      graph_id: undefined,
      metadata: undefined,
      limit: MAX_TOOLS,
      offset: 0,
    });
    // A system assistant of a graph no longer served is no tool: nothing could run it.
    const filter = { servedGraphs: deps.graphs.ids(), ...(visible ? { visible } : {}) };
    const { assistants } = await searchAssistants(sql, workspaceId, filter, {
      sortBy: "created_at",
      descending: false,
      limit: MAX_TOOLS,
      offset: 0,
    });
    const names = toolNames(assistants);
    return assistants.map((assistant, i) => ({ name: names[i]!, assistant }));
  };

  const list = async (workspaceId: string, principal: Principal): Promise<AssistantTool[]> => {
    const tools = await named(workspaceId, principal);
    const schemas = await Promise.all(
      tools.map(({ assistant }) => schemaWithin(deps.inputSchemas.of(assistant), SCHEMA_WAIT_MS)),
    );
    return tools.map(({ name, assistant }, i) => ({
      name,
      description:
        assistant.description ??
        deps.graphs.get(assistant.graphId)?.description ??
        `Runs the agentplane assistant ${assistant.name} (graph ${assistant.graphId}) on its input and answers its final state.`,
      inputSchema: objectSchema(schemas[i]),
      assistant,
    }));
  };

  return {
    list,
    async call(workspaceId, name, args, headers, signal, principal, context) {
      const tools = await named(workspaceId, principal);
      const tool = tools.find((t) => t.name === name);
      if (!tool)
        throw new ConnectError(
          `tool "${name}" not found; this workspace's tools: ${tools.map((t) => t.name).join(", ") || "none"}`,
          Code.NotFound,
        );
      const run = await launcher.start(
        workspaceId,
        { kind: "stateless" },
        {
          assistant_id: tool.assistant.assistantId,
          input: args,
          stream_mode: ["values"],
          ...(context ? { context } : {}),
        },
        headers,
        principal,
      );
      try {
        return outcomeOf(await launcher.waitForEnd(workspaceId, run.runId, signal));
      } catch (error) {
        // Nobody will read the answer, and a stateless run's thread goes with it: stop the work.
        if (signal.aborted) await launcher.cancel(workspaceId, run.runId).catch(() => {});
        throw error;
      }
    },
  };
}
