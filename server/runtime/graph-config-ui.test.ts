import { describe, expect, it } from "vitest";
import { GraphConfigError, parseGraphConfig } from "./graph-config.js";

const file = "/project/langgraph.json";
const graphs = { agent: "./agent.ts:graph" };

function problemsOf(raw: unknown): readonly string[] {
  try {
    parseGraphConfig(raw, file);
  } catch (error) {
    if (error instanceof GraphConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a GraphConfigError");
}

describe("the graphs file's ui and ui_config", () => {
  it("resolves ui modules against the file's folder and reads the shared modules", () => {
    const config = parseGraphConfig(
      {
        graphs,
        ui: { agent: "./src/ui.tsx", cards: "../shared/cards.tsx" },
        ui_config: { shared: ["@acme/ui"] },
      },
      file,
    );
    expect(config.ui).toEqual({
      bundles: [
        { name: "agent", file: "/project/src/ui.tsx" },
        { name: "cards", file: "/shared/cards.tsx" },
      ],
      shared: ["@acme/ui"],
    });
    expect(config.warnings).toEqual([
      'ui.cards names no graph: assistants use the ui of their graph id, so only LoadExternalComponent\'s namespace "cards" reaches it',
    ]);
  });

  it("is absent without ui, and warns about a ui_config alone", () => {
    expect(parseGraphConfig({ graphs }, file).ui).toBeUndefined();
    const config = parseGraphConfig({ graphs, ui_config: { shared: [] } }, file);
    expect(config.ui).toBeUndefined();
    expect(config.warnings).toEqual(["ui_config is set but there is no ui section: it has no effect"]);
  });

  it("names the key and what to fix for every bad value", () => {
    expect(problemsOf({ graphs, ui: ["./ui.tsx"] })).toEqual([
      'ui: must be an object of name → "./path/to/ui.tsx", got an array',
    ]);
    expect(problemsOf({ graphs, ui: { agent: 3, "a/b": "./ui.tsx", c: "" } })).toEqual([
      'ui.agent: must be the path of a module such as "./src/ui.tsx", got number 3',
      'ui.a/b: a ui name must be 1 to 128 letters, digits, "_", "." or "-"',
      'ui.c: must be the path of a module such as "./src/ui.tsx", got ""',
    ]);
    expect(problemsOf({ graphs, ui: { "my-ui": "./a.tsx", my_ui: "./b.tsx" } })).toEqual([
      'ui.my_ui: its bundle\'s global __LGUI_my_ui is also that of ui.my-ui (names differing only in "_", "." or "-"); rename one',
    ]);
    expect(
      problemsOf({ graphs, ui: { agent: "./ui.tsx" }, ui_config: { shared: ["ok", "../x", 4], css: true } }),
    ).toEqual([
      'ui_config.css: unknown key; ui_config has only "shared"',
      'ui_config.shared[1]: must be a module name such as "@acme/ui" or "lodash", got "../x"',
      'ui_config.shared[2]: must be a module name such as "@acme/ui" or "lodash", got number 4',
    ]);
    expect(problemsOf({ graphs, ui: { agent: "./ui.tsx" }, ui_config: "react" })).toEqual([
      'ui_config: must be an object such as {"shared": ["my-design-system"]}, got "react"',
    ]);
  });
});
