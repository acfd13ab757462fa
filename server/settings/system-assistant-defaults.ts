import type { JsonObject } from "@bufbuild/protobuf";
import { type AssistantSettings, syncAssistantSettings } from "./assistant-settings.js";
import { isRecord, kind } from "./json-shape.js";

/**
 * `LANGGRAPH_CONFIG` parsed: graph id → the config and context its system assistant gets. Graphs
 * it does not name get an empty config and context.
 */
export type SystemAssistantDefaults = ReadonlyMap<string, AssistantSettings>;

/** The name of the variable, as the LangGraph servers spell it. */
export const LANGGRAPH_CONFIG = "LANGGRAPH_CONFIG";

/**
 * Parses `LANGGRAPH_CONFIG` as the LangGraph servers read it: a JSON object of graph id → that
 * graph's default config, whose `context` key is the default context and whose other keys
 * (`configurable`, `tags`, `recursion_limit`…) are the config. Answers every problem, each a
 * sentence saying what to fix, instead of the defaults when the text is not such an object.
 */
export function parseSystemAssistantDefaults(
  text: string,
): { defaults: SystemAssistantDefaults } | { problems: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { problems: [`is not valid JSON: ${(error as Error).message}`] };
  }
  if (!isRecord(raw)) {
    return {
      problems: [
        `must be a JSON object of graph id → {"configurable": {…}, "context": {…}}, got ${kind(raw)}`,
      ],
    };
  }
  const problems: string[] = [];
  const defaults = new Map<string, AssistantSettings>();
  for (const [graphId, entry] of Object.entries(raw)) {
    if (!isRecord(entry)) {
      problems.push(`"${graphId}" must be an object such as {"configurable": {…}}, got ${kind(entry)}`);
      continue;
    }
    const { context, ...config } = entry;
    if (context !== undefined && !isRecord(context)) {
      problems.push(`"${graphId}".context must be a JSON object, got ${kind(context)}`);
      continue;
    }
    const synced = syncAssistantSettings(config as JsonObject, context as JsonObject | undefined);
    if ("problem" in synced) problems.push(`"${graphId}": ${synced.problem}`);
    else defaults.set(graphId, synced.settings);
  }
  return problems.length > 0 ? { problems } : { defaults };
}
