import type { JsonObject } from "@bufbuild/protobuf";

/**
 * An assistant's `config` and `context`, kept in sync: `config.configurable` and `context` hold the
 * same object (the LangGraph API's two names for the run-time settings of a graph).
 */
export interface AssistantSettings {
  readonly config: JsonObject;
  readonly context: JsonObject;
}

/**
 * {@link AssistantSettings} from a `config` and a `context` that may each be missing: one given
 * fills the other; both given must agree (the LangGraph server refuses both too). Answers the
 * problem, a sentence saying what to fix, when they cannot be reconciled.
 */
export function syncAssistantSettings(
  config: JsonObject | undefined,
  context: JsonObject | undefined,
): { settings: AssistantSettings } | { problem: string } {
  const configurable = config?.configurable;
  if (
    configurable !== undefined &&
    (typeof configurable !== "object" || configurable === null || Array.isArray(configurable))
  )
    return { problem: "config.configurable must be a JSON object" };
  const fromConfig = configurable as JsonObject | undefined;
  if (fromConfig && context && Object.keys(context).length > 0 && Object.keys(fromConfig).length > 0) {
    if (JSON.stringify(fromConfig) !== JSON.stringify(context)) {
      return {
        problem:
          "give either config.configurable or context, not both: they are the same settings (prefer context)",
      };
    }
  }
  const shared = context && Object.keys(context).length > 0 ? context : (fromConfig ?? context ?? {});
  const synced: JsonObject = { ...(config ?? {}) };
  if (fromConfig || Object.keys(shared).length > 0) synced.configurable = shared;
  return { settings: { config: synced, context: shared } };
}
