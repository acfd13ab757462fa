import { describe, expect, it } from "vitest";
import { parseSystemAssistantDefaults } from "./system-assistant-defaults.js";

describe("parseSystemAssistantDefaults", () => {
  it("splits each graph's entry into a config and the context, kept in sync", () => {
    const parsed = parseSystemAssistantDefaults(
      JSON.stringify({
        agent: { configurable: { model_name: "openai" }, recursion_limit: 10 },
        runtime: { context: { model: "unknown" } },
        both: { configurable: { a: 1 }, context: { a: 1 } },
        empty: {},
      }),
    );
    expect(parsed).toEqual({
      defaults: new Map([
        [
          "agent",
          {
            config: { configurable: { model_name: "openai" }, recursion_limit: 10 },
            context: { model_name: "openai" },
          },
        ],
        ["runtime", { config: { configurable: { model: "unknown" } }, context: { model: "unknown" } }],
        ["both", { config: { configurable: { a: 1 } }, context: { a: 1 } }],
        ["empty", { config: {}, context: {} }],
      ]),
    });
  });

  it("lists every problem, each naming the graph and what to fix", () => {
    expect(parseSystemAssistantDefaults('"agent"')).toEqual({
      problems: ['must be a JSON object of graph id → {"configurable": {…}, "context": {…}}, got "agent"'],
    });
    expect(
      parseSystemAssistantDefaults(
        JSON.stringify({
          a: 1,
          b: { context: "x" },
          c: { configurable: [] },
          d: { configurable: { k: 1 }, context: { k: 2 } },
        }),
      ),
    ).toEqual({
      problems: [
        '"a" must be an object such as {"configurable": {…}}, got number 1',
        '"b".context must be a JSON object, got "x"',
        '"c": config.configurable must be a JSON object',
        '"d": give either config.configurable or context, not both: they are the same settings (prefer context)',
      ],
    });
  });
});
