import type { JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { isUuid } from "../../ids.js";
import type { UiAsset, UiBundle, UiBundles } from "../../runtime/ui-bundler.js";
import type { Sql } from "../../store/db.js";
import { authorizedWorkspace, type Principal } from "../iam/principal.js";
import { invalid } from "../request-validation.js";
import { resolveAssistant } from "./run-assistant.js";
import type { SystemAssistants } from "./system-assistants.js";

/**
 * Generative UI: which bundle and component a `POST /ui/{assistant_id}` asks for, and the bundles'
 * files. As with the LangGraph servers, UI is keyed by graph id: an assistant (a UUID, looked up in
 * the caller's workspace) selects the bundle of its graph; a graph id or any other `ui` key (what
 * `LoadExternalComponent`'s `namespace` sends) selects that bundle directly.
 */
export interface GenerativeUi {
  /** The bundle and component name `body` (`{"name": ...}`) asks for through `ref`; 404/422 otherwise. */
  component(principal: Principal, ref: string, body: JsonValue | undefined): Promise<UiComponent>;
  /** A bundle's file, for the public static route; undefined when there is no such file. */
  asset(name: string, file: string): UiAsset | undefined;
}

/** A component to load: the bundle that defines it, and its name there. */
export interface UiComponent {
  readonly bundle: UiBundle;
  readonly name: string;
}

/** What {@link createGenerativeUi} needs. */
export interface GenerativeUiDeps {
  readonly sql: Sql;
  readonly systemAssistants: SystemAssistants;
  readonly graphIds: () => string[];
  readonly bundles: UiBundles;
}

/**
 * Component names are object keys of the user's module; when they cannot be listed, this bounds
 * what a request may send (a real name is an identifier of a few dozen characters).
 */
const MAX_COMPONENT_NAME_LENGTH = 256;

/** Creates the {@link GenerativeUi} of a process over its bundles. */
export function createGenerativeUi(deps: GenerativeUiDeps): GenerativeUi {
  const { bundles } = deps;
  const uiKeys = () => (bundles.names().length > 0 ? bundles.names().join(", ") : "none");

  const bundleOf = async (workspaceId: string, ref: string, principal: Principal): Promise<UiBundle> => {
    if (!isUuid(ref)) {
      const direct = bundles.get(ref);
      if (direct) return direct;
      throw new ConnectError(
        deps.graphIds().includes(ref)
          ? `graph "${ref}" has no generative UI: add it under "ui" in the graphs file (ui entries: ${uiKeys()})`
          : `no assistant, graph or ui entry is named "${ref}": send an assistant's UUID, a graph id or a ui name (ui entries: ${uiKeys()})`,
        Code.NotFound,
      );
    }
    const assistant = await resolveAssistant(deps, workspaceId, ref, principal);
    const bundle = bundles.get(assistant.graphId);
    if (!bundle)
      throw new ConnectError(
        `assistant ${assistant.assistantId} uses graph "${assistant.graphId}", which has no generative UI (ui entries: ${uiKeys()})`,
        Code.NotFound,
      );
    return bundle;
  };

  return {
    async component(principal, ref, body) {
      const workspace = await authorizedWorkspace(principal, "assistants:read");
      const name = componentName(body);
      const bundle = await bundleOf(workspace.id, ref, principal);
      if (bundle.components && !bundle.components.has(name))
        throw new ConnectError(
          `ui "${bundle.name}" has no component "${name}"; its components: ${[...bundle.components].join(", ") || "none"}`,
          Code.NotFound,
        );
      return { bundle, name };
    },
    asset: (name, file) => bundles.get(name)?.files.get(file),
  };
}

/**
 * The `name` of a `{"name": "<component>"}` body; INVALID_ARGUMENT saying what to send otherwise.
 * Other members are a newer client's and are ignored (the adapter counts them).
 */
function componentName(body: JsonValue | undefined): string {
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body))
    throw invalid('the body must be a JSON object such as {"name": "weather"}: the component to load');
  const name = body.name;
  if (typeof name !== "string" || name === "")
    throw invalid('"name" is required: the name of the component to load, such as {"name": "weather"}');
  if (name.length > MAX_COMPONENT_NAME_LENGTH)
    throw invalid(
      `"name" is ${name.length} characters long; a component name has at most ${MAX_COMPONENT_NAME_LENGTH}`,
    );
  return name;
}
