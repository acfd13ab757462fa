import { access, readFile } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import { parseEnv } from "node:util";
import { isRecord, kind } from "../settings/json-shape.js";
import {
  LANGGRAPH_CONFIG,
  parseSystemAssistantDefaults,
  type SystemAssistantDefaults,
} from "../settings/system-assistant-defaults.js";
import { type AuthConfig, parseAuthConfig } from "./graph-config-auth.js";
import { type EncryptionConfig, parseEncryptionConfig } from "./graph-config-encryption.js";
import { type HttpAppConfig, parseHttpAppConfig } from "./graph-config-http.js";
import { parseUiConfig, type UiConfig } from "./graph-config-ui.js";
import { parseWebhooksSection, type WebhooksSection } from "./graph-config-webhooks.js";

/** One graph of the config: where its module is and which export holds the graph. */
export interface GraphSpec {
  /** The graph id: the key under `graphs`. */
  readonly graphId: string;
  /** Absolute path of the module. */
  readonly file: string;
  /** The export holding the graph (`default` when the spec names none). */
  readonly exportName: string;
  /** Free text from the `{ path, description }` form. */
  readonly description?: string;
}

/** `store.ttl`: expiry of store items. */
export interface StoreTtlConfig {
  /** Minutes an item lives unless its put says otherwise; undefined: forever. */
  readonly defaultTtlMinutes?: number;
  /** Whether reads push the expiry back (default true). */
  readonly refreshOnRead: boolean;
  /** Minutes between sweeps of expired items. */
  readonly sweepIntervalMinutes?: number;
}

/** `checkpointer.ttl`: expiry of threads' checkpoints. */
export interface CheckpointerTtlConfig {
  /** `delete` removes the thread; `keep_latest` keeps only its latest checkpoint. */
  readonly strategy: "delete" | "keep_latest";
  /** Minutes a thread lives after its last change; undefined: forever. */
  readonly defaultTtlMinutes?: number;
  /** Minutes between sweeps. */
  readonly sweepIntervalMinutes?: number;
}

/** `http.configurable_headers`: which request headers runs see in `config.configurable`. */
export interface ConfigurableHeadersConfig {
  /** Header name patterns (`*` wildcards) to copy. */
  readonly include: readonly string[];
  /** Header name patterns never copied; wins over `include`. */
  readonly exclude: readonly string[];
}

/** The graphs file's `http` section (the custom-app keys: graph-config-http.ts). */
export interface HttpConfig extends HttpAppConfig {
  readonly configurableHeaders?: ConfigurableHeadersConfig;
  /** `http.disable_a2a`: no A2A endpoint or agent card (they answer 404). */
  readonly disableA2a?: boolean;
  /** `http.disable_mcp`: no MCP endpoint at `/mcp` (it answers 404). */
  readonly disableMcp?: boolean;
}

/** The validated graph config (agentplane.json / langgraph.json). */
export interface GraphConfig {
  /** The file it came from; undefined for the bundled example. */
  readonly file: string | undefined;
  /** The graphs, in file order. */
  readonly graphs: readonly GraphSpec[];
  /** Environment variables for the graphs, from `env` (an object or a dotenv file). */
  readonly env: Readonly<Record<string, string>>;
  /** `env.LANGGRAPH_CONFIG` parsed: the default config and context of the system assistants. */
  readonly assistantDefaults?: SystemAssistantDefaults;
  /** `store` settings. */
  readonly store: { readonly ttl?: StoreTtlConfig };
  /** `checkpointer` settings. */
  readonly checkpointer: { readonly ttl?: CheckpointerTtlConfig };
  /** `http` settings. */
  readonly http: HttpConfig;
  /** `ui` and `ui_config`: generative-UI components (graph-config-ui.ts); undefined without `ui`. */
  readonly ui?: UiConfig;
  /** `auth` settings: the custom Auth object (server/runtime/graph-config-auth.ts). */
  readonly auth?: AuthConfig;
  /** `webhooks`: headers (templates unfilled) and URL policy (server/runtime/graph-config-webhooks.ts). */
  readonly webhooks?: WebhooksSection;
  /** `encryption` settings: the custom encryption handlers (server/runtime/graph-config-encryption.ts). */
  readonly encryption?: EncryptionConfig;
  /** Things worth a log line that do not stop start-up, such as unknown top-level keys. */
  readonly warnings: readonly string[];
}

/** Thrown with every problem of a graph config, one per line, each naming its key path. */
export class GraphConfigError extends Error {
  /** Each problem as a sentence starting with the key path. */
  readonly problems: readonly string[];
  constructor(file: string, problems: string[]) {
    super(`invalid graph config ${file}:\n  - ${problems.join("\n  - ")}`);
    this.name = "GraphConfigError";
    this.problems = problems;
  }
}

/**
 * Graph ids stand in for assistant ids in URL paths, so they are URL-safe without escaping; 128
 * characters is far beyond any real graph name and keeps ids short in logs and indexes.
 */
const GRAPH_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/** Names looked for in the working directory when AGENTPLANE_CONFIG is not set, in order. */
export const GRAPH_CONFIG_FILE_NAMES = ["agentplane.json", "langgraph.json"] as const;

/**
 * Top-level langgraph.json keys agentplane reads elsewhere or has no use for (build, deployment
 * and UI settings of the LangGraph CLI); accepted without a warning.
 */
const IGNORED_TOP_LEVEL_KEYS = new Set([
  "$schema",
  "dependencies",
  "python_version",
  "node_version",
  "pip_config_file",
  "pip_installer",
  "base_image",
  "image_distro",
  "dockerfile_lines",
  "keep_pkg_tools",
  "api_version",
  "encryption",
  "ui",
  "ui_config",
  "_INTERNAL_docker_tag",
]);

/**
 * The config file to use: `explicit` (AGENTPLANE_CONFIG) when set, else the first of
 * {@link GRAPH_CONFIG_FILE_NAMES} in `cwd`, else undefined (serve the bundled example).
 */
export async function findGraphConfigFile(
  explicit: string | undefined,
  cwd: string,
): Promise<string | undefined> {
  if (explicit !== undefined) return resolve(cwd, explicit);
  for (const name of GRAPH_CONFIG_FILE_NAMES) {
    const candidate = resolve(cwd, name);
    if (await exists(candidate)) return candidate;
  }
  return undefined;
}

/** Reads, parses and validates a config file; a dotenv `env` is read relative to it. */
export async function loadGraphConfigFile(file: string): Promise<GraphConfig> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new GraphConfigError(file, [`the file cannot be read: ${(error as Error).message}`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new GraphConfigError(file, [`the file is not valid JSON: ${(error as Error).message}`]);
  }
  const config = parseGraphConfig(raw, file);
  const envFile = isRecord(raw) && typeof raw.env === "string" ? raw.env : undefined;
  if (envFile === undefined) return config;
  const envPath = resolve(dirname(file), envFile);
  let envText: string;
  try {
    envText = await readFile(envPath, "utf8");
  } catch (error) {
    throw new GraphConfigError(file, [
      `env: the dotenv file ${envPath} cannot be read: ${(error as Error).message}`,
    ]);
  }
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parseEnv(envText))) if (value !== undefined) env[name] = value;
  const problems: string[] = [];
  const assistantDefaults = parseEnvAssistantDefaults(env, `env (${envPath})`, problems);
  if (problems.length > 0) throw new GraphConfigError(file, problems);
  return { ...config, env, ...optional("assistantDefaults", assistantDefaults) };
}

/**
 * `checkpointer.serde` of LangGraph's graphs file configures the Python checkpoint serializer:
 * `allowed_json_modules` lists the Python classes (module path and class name) a JSON payload may
 * revive, `pickle_fallback` lets it fall back to pickle. agentplane serialises checkpoints with
 * LangGraph.js's serializer, which revives LangChain's own classes (`@langchain/core`'s `load`) and
 * a fixed set of JavaScript built-ins, and never imports a module a payload names: there is nothing
 * an allowlist could allow, and no pickle. Accepting the keys would pretend a policy that does not
 * apply, so each one is refused, saying why.
 */
function refuseSerdeSettings(serde: unknown, problems: string[]): void {
  if (serde === undefined || serde === null) return;
  if (!isRecord(serde)) {
    problems.push(`checkpointer.serde: must be an object, got ${kind(serde)}`);
    return;
  }
  const why =
    "agentplane stores checkpoints with LangGraph.js's serializer, which revives only LangChain's own classes and JavaScript built-ins and never imports a module named in stored data; remove the key";
  for (const key of Object.keys(serde)) {
    if (key === "allowed_json_modules")
      problems.push(
        `checkpointer.serde.allowed_json_modules: is an allowlist of Python classes for the Python serializer; ${why}`,
      );
    else if (key === "pickle_fallback")
      problems.push(`checkpointer.serde.pickle_fallback: pickle is Python's; ${why}`);
    else problems.push(`checkpointer.serde.${key}: unknown serializer setting; ${why}`);
  }
}

/**
 * Validates parsed JSON as a graph config from `file` (graph paths resolve against its folder).
 * A string `env` (a dotenv path) yields an empty `env` here; {@link loadGraphConfigFile} reads it.
 * Throws a {@link GraphConfigError} listing every problem.
 */
export function parseGraphConfig(raw: unknown, file: string): GraphConfig {
  const problems: string[] = [];
  const warnings: string[] = [];
  if (!isRecord(raw))
    throw new GraphConfigError(file, [`the top level must be a JSON object, got ${kind(raw)}`]);
  const dir = dirname(file);

  for (const key of Object.keys(raw)) {
    if (
      !["graphs", "env", "store", "checkpointer", "http", "auth", "webhooks"].includes(key) &&
      !IGNORED_TOP_LEVEL_KEYS.has(key)
    )
      warnings.push(`unknown top-level key "${key}" is ignored`);
  }

  const graphs: GraphSpec[] = [];
  if (raw.graphs === undefined) problems.push('graphs: required, an object of graph id → "./file.ts:export"');
  else if (!isRecord(raw.graphs)) problems.push(`graphs: must be an object, got ${kind(raw.graphs)}`);
  else {
    if (Object.keys(raw.graphs).length === 0) problems.push("graphs: must name at least one graph");
    for (const [graphId, value] of Object.entries(raw.graphs)) {
      const spec = parseGraphSpec(graphId, value, dir, problems);
      if (spec) graphs.push(spec);
    }
  }

  const env: Record<string, string> = {};
  if (isRecord(raw.env)) {
    for (const [name, value] of Object.entries(raw.env)) {
      if (typeof value === "string") env[name] = value;
      else if (typeof value === "number" || typeof value === "boolean") env[name] = String(value);
      else problems.push(`env.${name}: must be a string, got ${kind(value)}`);
    }
  } else if (raw.env !== undefined && typeof raw.env !== "string") {
    problems.push(`env: must be an object of variables or the path of a dotenv file, got ${kind(raw.env)}`);
  }
  const assistantDefaults = parseEnvAssistantDefaults(env, "env", problems);

  const section = (name: string): Record<string, unknown> | undefined => {
    const value = raw[name];
    if (value === undefined || value === null) return undefined;
    if (isRecord(value)) return value;
    problems.push(`${name}: must be an object, got ${kind(value)}`);
    return undefined;
  };
  const fields = createFieldReader(problems);

  const store: { ttl?: StoreTtlConfig } = {};
  const storeTtl = fields.object(section("store"), "store", "ttl");
  if (storeTtl) {
    store.ttl = {
      ...optional("defaultTtlMinutes", fields.minutes(storeTtl, "store.ttl", "default_ttl")),
      refreshOnRead: fields.boolean(storeTtl, "store.ttl", "refresh_on_read") ?? true,
      ...optional("sweepIntervalMinutes", fields.minutes(storeTtl, "store.ttl", "sweep_interval_minutes")),
    };
  }

  const checkpointer: { ttl?: CheckpointerTtlConfig } = {};
  const checkpointerSection = section("checkpointer");
  refuseSerdeSettings(checkpointerSection?.serde, problems);
  const checkpointerTtl = fields.object(checkpointerSection, "checkpointer", "ttl");
  if (checkpointerTtl) {
    const strategy = checkpointerTtl.strategy ?? "delete";
    if (strategy !== "delete" && strategy !== "keep_latest")
      problems.push(`checkpointer.ttl.strategy: must be "delete" or "keep_latest", got ${kind(strategy)}`);
    checkpointer.ttl = {
      strategy: strategy === "keep_latest" ? "keep_latest" : "delete",
      ...optional("defaultTtlMinutes", fields.minutes(checkpointerTtl, "checkpointer.ttl", "default_ttl")),
      ...optional(
        "sweepIntervalMinutes",
        fields.minutes(checkpointerTtl, "checkpointer.ttl", "sweep_interval_minutes"),
      ),
    };
  }

  const httpSection = section("http");
  const http: { -readonly [K in keyof HttpConfig]: HttpConfig[K] } = {};
  const headers = fields.object(httpSection, "http", "configurable_headers");
  if (headers) {
    const list = (singular: string, plural: string): string[] => {
      const a = fields.strings(headers, "http.configurable_headers", singular) ?? [];
      const b = fields.strings(headers, "http.configurable_headers", plural) ?? [];
      return [...a, ...b];
    };
    http.configurableHeaders = { include: list("include", "includes"), exclude: list("exclude", "excludes") };
  }
  if (httpSection) {
    const disableA2a = fields.boolean(httpSection, "http", "disable_a2a");
    const disableMcp = fields.boolean(httpSection, "http", "disable_mcp");
    if (disableA2a !== undefined) http.disableA2a = disableA2a;
    if (disableMcp !== undefined) http.disableMcp = disableMcp;
  }
  Object.assign(http, parseHttpAppConfig(httpSection, dir, problems));
  const webhooks = parseWebhooksSection(raw.webhooks, problems);

  const ui = parseUiConfig(raw, file, graphs, problems, warnings);
  const auth = parseAuthConfig(raw.auth, dir, problems);
  const encryption = parseEncryptionConfig(raw.encryption, dir, problems);

  if (problems.length > 0) throw new GraphConfigError(file, problems);
  return {
    file,
    graphs,
    env,
    ...optional("assistantDefaults", assistantDefaults),
    store,
    checkpointer,
    http,
    ...optional("ui", ui),
    ...optional("auth", auth),
    ...optional("webhooks", webhooks),
    ...optional("encryption", encryption),
    warnings,
  };
}

/** `LANGGRAPH_CONFIG` of a graphs file's `env` (found at `at`), parsed; problems are recorded. */
function parseEnvAssistantDefaults(
  env: Readonly<Record<string, string>>,
  at: string,
  problems: string[],
): SystemAssistantDefaults | undefined {
  const text = env[LANGGRAPH_CONFIG];
  if (text === undefined) return undefined;
  const parsed = parseSystemAssistantDefaults(text);
  if ("defaults" in parsed) return parsed.defaults;
  for (const problem of parsed.problems) problems.push(`${at}.${LANGGRAPH_CONFIG}: ${problem}`);
  return undefined;
}

function parseGraphSpec(
  graphId: string,
  value: unknown,
  dir: string,
  problems: string[],
): GraphSpec | undefined {
  const at = `graphs.${graphId}`;
  if (!GRAPH_ID_PATTERN.test(graphId)) {
    problems.push(`${at}: a graph id must be 1 to 128 letters, digits, "_", "." or "-"`);
    return undefined;
  }
  let path: unknown = value;
  let description: string | undefined;
  if (isRecord(value)) {
    path = value.path;
    if (value.description !== undefined && typeof value.description !== "string")
      problems.push(`${at}.description: must be a string, got ${kind(value.description)}`);
    else description = value.description;
  }
  if (typeof path !== "string" || path.trim() === "") {
    problems.push(
      `${at}${isRecord(value) ? ".path" : ""}: must be a string such as "./src/graph.ts:graph", got ${kind(path)}`,
    );
    return undefined;
  }
  // The export follows the last ":" unless that colon belongs to a Windows drive ("C:\...").
  const colon = path.lastIndexOf(":");
  const hasExport = colon > 1 || (colon === 1 && !isAbsolute(path));
  const modulePath = hasExport ? path.slice(0, colon) : path;
  const exportName = hasExport ? path.slice(colon + 1) : "default";
  if (!/^[A-Za-z_$][\w$]*$/.test(exportName)) {
    problems.push(`${at}: "${exportName}" is not a valid export name (in "${path}")`);
    return undefined;
  }
  return {
    graphId,
    file: resolve(dir, modulePath),
    exportName,
    ...(description === undefined ? {} : { description }),
  };
}

/** Typed readers of nested keys that record a problem (with the key path) for a wrong type. */
function createFieldReader(problems: string[]) {
  return {
    object(parent: Record<string, unknown> | undefined, at: string, key: string) {
      const value = parent?.[key];
      if (value === undefined || value === null) return undefined;
      if (isRecord(value)) return value;
      problems.push(`${at}.${key}: must be an object, got ${kind(value)}`);
      return undefined;
    },
    minutes(parent: Record<string, unknown>, at: string, key: string): number | undefined {
      const value = parent[key];
      if (value === undefined || value === null) return undefined;
      if (typeof value === "number" && Number.isFinite(value) && value > 0) return value;
      problems.push(`${at}.${key}: must be a positive number of minutes, got ${kind(value)}`);
      return undefined;
    },
    boolean(parent: Record<string, unknown>, at: string, key: string): boolean | undefined {
      const value = parent[key];
      if (value === undefined || value === null) return undefined;
      if (typeof value === "boolean") return value;
      problems.push(`${at}.${key}: must be true or false, got ${kind(value)}`);
      return undefined;
    },
    strings(parent: Record<string, unknown>, at: string, key: string): string[] | undefined {
      const value = parent[key];
      if (value === undefined || value === null) return undefined;
      if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value;
      problems.push(`${at}.${key}: must be an array of strings, got ${kind(value)}`);
      return undefined;
    },
  };
}

/** `{ [key]: value }` when value is defined, else `{}` (for exactOptionalPropertyTypes-friendly spreads). */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
