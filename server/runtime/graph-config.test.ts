import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  findGraphConfigFile,
  GraphConfigError,
  loadGraphConfigFile,
  parseGraphConfig,
} from "./graph-config.js";

const file = "/project/langgraph.json";

function problemsOf(raw: unknown): readonly string[] {
  try {
    parseGraphConfig(raw, file);
  } catch (error) {
    if (error instanceof GraphConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a GraphConfigError");
}

describe("parseGraphConfig", () => {
  it("reads both graph forms, resolving paths against the config's folder", () => {
    const config = parseGraphConfig(
      {
        graphs: {
          agent: "./src/agent.ts:graph",
          plain: "./src/plain.mts",
          described: { path: "../shared/graph.js:make", description: "shared" },
        },
      },
      file,
    );
    expect(config.graphs).toEqual([
      { graphId: "agent", file: "/project/src/agent.ts", exportName: "graph" },
      { graphId: "plain", file: "/project/src/plain.mts", exportName: "default" },
      { graphId: "described", file: "/shared/graph.js", exportName: "make", description: "shared" },
    ]);
    expect(config.file).toBe(file);
    expect(config.warnings).toEqual([]);
  });

  it("reads env, store, checkpointer and http settings, with both header list spellings", () => {
    const config = parseGraphConfig(
      {
        graphs: { a: "./a.ts:g" },
        env: { KEY: "v", N: 3 },
        store: {
          ttl: { default_ttl: 60, refresh_on_read: false, sweep_interval_minutes: 5 },
          index: { dims: 3 },
        },
        checkpointer: { ttl: { strategy: "keep_latest", default_ttl: 1440, sweep_interval_minutes: 10 } },
        http: { configurable_headers: { include: ["x-user-*"], excludes: ["x-secret"], exclude: ["x-b"] } },
      },
      file,
    );
    expect(config.env).toEqual({ KEY: "v", N: "3" });
    expect(config.store.ttl).toEqual({
      defaultTtlMinutes: 60,
      refreshOnRead: false,
      sweepIntervalMinutes: 5,
    });
    expect(config.checkpointer.ttl).toEqual({
      strategy: "keep_latest",
      defaultTtlMinutes: 1440,
      sweepIntervalMinutes: 10,
    });
    expect(config.http.configurableHeaders).toEqual({ include: ["x-user-*"], exclude: ["x-b", "x-secret"] });
  });

  it("reads http.disable_a2a and http.disable_mcp, which must be booleans", () => {
    const config = parseGraphConfig(
      { graphs: { a: "./a.ts" }, http: { disable_a2a: true, disable_mcp: false } },
      file,
    );
    expect(config.http).toEqual({ disableA2a: true, disableMcp: false });
    expect(parseGraphConfig({ graphs: { a: "./a.ts" } }, file).http).toEqual({});
    expect(problemsOf({ graphs: { a: "./a.ts" }, http: { disable_a2a: "yes", disable_mcp: 1 } })).toEqual([
      'http.disable_a2a: must be true or false, got "yes"',
      "http.disable_mcp: must be true or false, got number 1",
    ]);
  });

  it("defaults refresh_on_read to true and the checkpointer strategy to delete", () => {
    const config = parseGraphConfig(
      { graphs: { a: "./a.ts" }, store: { ttl: {} }, checkpointer: { ttl: { default_ttl: 5 } } },
      file,
    );
    expect(config.store.ttl).toEqual({ refreshOnRead: true });
    expect(config.checkpointer.ttl).toEqual({ strategy: "delete", defaultTtlMinutes: 5 });
  });

  it("ignores langgraph.json keys it has no use for and warns about unknown ones", () => {
    const config = parseGraphConfig(
      {
        graphs: { a: "./a.ts" },
        dependencies: ["."],
        node_version: "20",
        dockerfile_lines: [],
        grpahs: {},
      },
      file,
    );
    expect(config.warnings).toEqual(['unknown top-level key "grpahs" is ignored']);
  });

  it("lists every problem with its key path", () => {
    expect(
      problemsOf({
        graphs: {
          ok: "./a.ts",
          "bad id!": "./b.ts",
          num: 5,
          obj: { description: 3 },
          exp: "./c.ts:not-valid",
        },
        env: { A: { nested: true } },
        store: { ttl: { default_ttl: "soon", refresh_on_read: "yes" } },
        checkpointer: { ttl: { strategy: "forever", sweep_interval_minutes: -1 } },
        http: { configurable_headers: { include: "x-a", excludes: [1] } },
      }),
    ).toEqual([
      'graphs.bad id!: a graph id must be 1 to 128 letters, digits, "_", "." or "-"',
      'graphs.num: must be a string such as "./src/graph.ts:graph", got number 5',
      "graphs.obj.description: must be a string, got number 3",
      'graphs.obj.path: must be a string such as "./src/graph.ts:graph", got undefined undefined',
      'graphs.exp: "not-valid" is not a valid export name (in "./c.ts:not-valid")',
      "env.A: must be a string, got an object",
      'store.ttl.default_ttl: must be a positive number of minutes, got "soon"',
      'store.ttl.refresh_on_read: must be true or false, got "yes"',
      'checkpointer.ttl.strategy: must be "delete" or "keep_latest", got "forever"',
      "checkpointer.ttl.sweep_interval_minutes: must be a positive number of minutes, got number -1",
      'http.configurable_headers.include: must be an array of strings, got "x-a"',
      "http.configurable_headers.excludes: must be an array of strings, got an array",
    ]);
  });

  it("refuses checkpointer.serde, whose settings belong to the Python serializer, saying why", () => {
    const problems = problemsOf({
      graphs: { a: "./a.ts" },
      checkpointer: {
        serde: { allowed_json_modules: [["my_agent", "models", "Ticket"]], pickle_fallback: true },
        ttl: { default_ttl: 5 },
      },
    });
    expect(problems).toEqual([
      expect.stringMatching(
        /^checkpointer\.serde\.allowed_json_modules: is an allowlist of Python classes for the Python serializer; agentplane stores checkpoints with LangGraph\.js's serializer, which revives only LangChain's own classes and JavaScript built-ins and never imports a module named in stored data; remove the key$/,
      ),
      expect.stringMatching(/^checkpointer\.serde\.pickle_fallback: pickle is Python's; agentplane stores/),
    ]);
    expect(problemsOf({ graphs: { a: "./a.ts" }, checkpointer: { serde: [] } })).toEqual([
      "checkpointer.serde: must be an object, got an array",
    ]);
    expect(
      parseGraphConfig({ graphs: { a: "./a.ts" }, checkpointer: { serde: {} } }, file).checkpointer,
    ).toEqual({});
  });

  it("reads LANGGRAPH_CONFIG from env as the system assistants' defaults, or names its problem", () => {
    const config = parseGraphConfig(
      { graphs: { a: "./a.ts" }, env: { LANGGRAPH_CONFIG: '{"a": {"context": {"model": "m"}}}' } },
      file,
    );
    expect(config.assistantDefaults?.get("a")).toEqual({
      config: { configurable: { model: "m" } },
      context: { model: "m" },
    });
    expect(parseGraphConfig({ graphs: { a: "./a.ts" } }, file).assistantDefaults).toBeUndefined();
    expect(problemsOf({ graphs: { a: "./a.ts" }, env: { LANGGRAPH_CONFIG: "[1]" } })).toEqual([
      'env.LANGGRAPH_CONFIG: must be a JSON object of graph id → {"configurable": {…}, "context": {…}}, got an array',
    ]);
  });

  it("requires graphs, and objects where objects belong", () => {
    expect(problemsOf({})).toEqual(['graphs: required, an object of graph id → "./file.ts:export"']);
    expect(problemsOf({ graphs: {} })).toEqual(["graphs: must name at least one graph"]);
    expect(problemsOf({ graphs: ["./a.ts"], env: 3, store: [], http: "x" })).toEqual([
      "graphs: must be an object, got an array",
      "env: must be an object of variables or the path of a dotenv file, got number 3",
      "store: must be an object, got an array",
      'http: must be an object, got "x"',
    ]);
    expect(problemsOf([])).toEqual(["the top level must be a JSON object, got an array"]);
  });
});

describe("config files", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "agentplane-graph-config-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("finds AGENTPLANE_CONFIG, else agentplane.json, else langgraph.json, else nothing", async () => {
    expect(await findGraphConfigFile(undefined, dir)).toBeUndefined();
    await writeFile(join(dir, "langgraph.json"), "{}");
    expect(await findGraphConfigFile(undefined, dir)).toBe(join(dir, "langgraph.json"));
    await writeFile(join(dir, "agentplane.json"), "{}");
    expect(await findGraphConfigFile(undefined, dir)).toBe(join(dir, "agentplane.json"));
    expect(await findGraphConfigFile("conf/x.json", dir)).toBe(join(dir, "conf/x.json"));
  });

  it("reads a dotenv env file relative to the config", async () => {
    await writeFile(join(dir, ".env.graphs"), 'API_URL=http://x\n# comment\nQUOTED="a b"\n');
    const path = join(dir, "with-env.json");
    await writeFile(path, JSON.stringify({ graphs: { a: "./a.ts" }, env: ".env.graphs" }));
    expect((await loadGraphConfigFile(path)).env).toEqual({ API_URL: "http://x", QUOTED: "a b" });
  });

  it("reads LANGGRAPH_CONFIG from a dotenv env file, or names the file and the problem", async () => {
    await writeFile(join(dir, ".env.assistants"), `LANGGRAPH_CONFIG='{"a": {"configurable": {"k": 1}}}'\n`);
    const good = join(dir, "with-assistants.json");
    await writeFile(good, JSON.stringify({ graphs: { a: "./a.ts" }, env: ".env.assistants" }));
    expect((await loadGraphConfigFile(good)).assistantDefaults?.get("a")?.context).toEqual({ k: 1 });
    await writeFile(join(dir, ".env.broken"), "LANGGRAPH_CONFIG=not json\n");
    const bad = join(dir, "with-broken.json");
    await writeFile(bad, JSON.stringify({ graphs: { a: "./a.ts" }, env: ".env.broken" }));
    await expect(loadGraphConfigFile(bad)).rejects.toThrow(
      /env \(.*\.env\.broken\)\.LANGGRAPH_CONFIG: is not valid JSON/,
    );
  });

  it("names the file and the problem for unreadable, malformed or missing files", async () => {
    const broken = join(dir, "broken.json");
    await writeFile(broken, "{ graphs: ");
    await expect(loadGraphConfigFile(broken)).rejects.toThrow(/broken\.json[\s\S]*not valid JSON/);
    await expect(loadGraphConfigFile(join(dir, "missing.json"))).rejects.toThrow(
      /missing\.json[\s\S]*cannot be read/,
    );
    const badEnv = join(dir, "bad-env.json");
    await writeFile(badEnv, JSON.stringify({ graphs: { a: "./a.ts" }, env: "./nope.env" }));
    await expect(loadGraphConfigFile(badEnv)).rejects.toThrow(
      /env: the dotenv file .*nope\.env cannot be read/,
    );
  });
});
