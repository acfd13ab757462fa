import { describe, expect, it } from "vitest";
import { GraphConfigError, parseGraphConfig } from "./graph-config.js";

const file = "/project/langgraph.json";
const graphs = { agent: "./agent.ts:graph" };

function problemsOf(http: unknown): readonly string[] {
  try {
    parseGraphConfig({ graphs, http }, file);
  } catch (error) {
    if (error instanceof GraphConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a GraphConfigError");
}

describe("the graphs file's custom-app keys", () => {
  it("reads every key, resolving http.app against the file's folder", () => {
    const { http } = parseGraphConfig(
      {
        graphs,
        http: {
          app: "./src/app.ts:api",
          mount_prefix: "/my-agent/v1",
          middleware_order: "auth_first",
          enable_custom_route_auth: true,
          disable_assistants: true,
          disable_webhooks: true,
          disable_store: false,
          cors: {
            allow_origins: ["https://app.example.com"],
            allow_methods: ["purge"],
            allow_headers: ["X-Custom"],
            expose_headers: ["X-Seen"],
            allow_credentials: true,
            max_age: 600,
          },
        },
      },
      file,
    );
    expect(http).toEqual({
      app: { file: "/project/src/app.ts", exportName: "api", text: "./src/app.ts:api" },
      mountPrefix: "/my-agent/v1",
      middlewareOrder: "auth_first",
      enableCustomRouteAuth: true,
      disabledGroups: ["assistants", "webhooks"],
      cors: {
        allowOrigins: ["https://app.example.com"],
        allowMethods: ["PURGE"],
        allowHeaders: ["x-custom"],
        exposeHeaders: ["x-seen"],
        allowCredentials: true,
        maxAgeSeconds: 600,
      },
    });
  });

  it("leaves the export to the loader when http.app names none", () => {
    expect(parseGraphConfig({ graphs, http: { app: "./app.ts" } }, file).http.app).toEqual({
      file: "/project/app.ts",
      text: "./app.ts",
    });
  });

  it.each([
    [{ app: 5 }, 'http.app: must be a string such as "./src/app.ts:app", got number 5'],
    [
      { app: "./app.ts:not-a-name" },
      'http.app: "not-a-name" is not a valid export name (in "./app.ts:not-a-name")',
    ],
    [{ mount_prefix: "api" }, 'http.mount_prefix: must be a path such as "/my-agent"'],
    [{ mount_prefix: "/api/" }, 'http.mount_prefix: must be a path such as "/my-agent"'],
    [
      { middleware_order: "last" },
      'http.middleware_order: must be "middleware_first" or "auth_first", got "last"',
    ],
    [{ enable_custom_route_auth: "yes" }, "http.enable_custom_route_auth: must be true or false"],
    [{ disable_runs: 1 }, "http.disable_runs: must be true or false"],
    [{ cors: [] }, "http.cors: must be an object"],
    [
      { cors: { allow_origins: "https://a.example" } },
      "http.cors.allow_origins: must be an array of strings",
    ],
    [{ cors: { allow_origins: ["a.example"] } }, 'http.cors.allow_origins: "a.example" is no origin'],
    [
      { cors: { allow_headers: ["bad header"] } },
      'http.cors.allow_headers: "bad header" is no HTTP header name',
    ],
    [{ cors: { max_age: -1 } }, "http.cors.max_age: must be a whole number of seconds"],
    [{ cors: { allow_origin: ["*"] } }, "http.cors.allow_origin: unknown key"],
    [
      { cors: { allow_origins: ["*"], allow_credentials: true } },
      'http.cors.allow_credentials: cannot be true with allow_origins ["*"]',
    ],
  ])("refuses %j", (http, problem) => {
    expect(problemsOf(http)).toEqual([expect.stringContaining(problem)]);
  });
});
