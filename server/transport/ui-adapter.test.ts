import { describe, expect, it } from "vitest";
import type { UiBundle } from "../runtime/ui-bundler.js";
import type { GenerativeUi } from "../services/agents/generative-ui.js";
import type { Authenticator } from "../services/iam/authenticator.js";
import { componentHtml, createUiAdapter, UI_ROUTES } from "./ui-adapter.js";

const asset = { body: Buffer.from(""), contentType: "text/javascript; charset=utf-8", etag: '"x"' };

function bundle(files: string[]): UiBundle {
  return {
    name: "agent",
    globalName: "__LGUI_agent",
    files: new Map(files.map((file) => [file, asset])),
    components: undefined,
  };
}

describe("componentHtml", () => {
  it("links the stylesheet only when the bundle has one", () => {
    expect(componentHtml({ bundle: bundle(["entrypoint.js"]), name: "card" }, "http://127.0.0.1:2024")).toBe(
      `<script src="http://127.0.0.1:2024/ui/agent/entrypoint.js" onload='__LGUI_agent.render("card", "{{shadowRootId}}")'></script>`,
    );
    expect(componentHtml({ bundle: bundle(["entrypoint.js", "entrypoint.css"]), name: "card" }, "//h")).toBe(
      [
        `<link rel="stylesheet" href="//h/ui/agent/entrypoint.css" />`,
        `<script src="//h/ui/agent/entrypoint.js" onload='__LGUI_agent.render("card", "{{shadowRootId}}")'></script>`,
      ].join("\n"),
    );
  });

  it("keeps a component name with quotes and ampersands inside the onload attribute", () => {
    const html = componentHtml({ bundle: bundle(["entrypoint.js"]), name: `it's "<b>" & more` }, "//h");
    expect(html).toContain(
      `onload='__LGUI_agent.render("it&#39;s \\"<b>\\" &amp; more", "{{shadowRootId}}")'`,
    );
  });
});

describe("createUiAdapter", () => {
  const ui = {} as GenerativeUi;
  const auth = {} as Authenticator;

  it("serves both UI routes", () => {
    expect(createUiAdapter({ ui, auth }).map((e) => e.path)).toEqual(UI_ROUTES.map((r) => r.path));
  });
});
