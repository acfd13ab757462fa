import { readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { signHs256 } from "../../examples/custom-auth/hs256-jwt.js";

/** The example's JWT `Auth`: owner stamped on create, owner filter on every read. */
const EXAMPLE_AUTH = fileURLToPath(new URL("../../examples/custom-auth/auth.ts", import.meta.url));
/** The bundled example graph, which benches without a graphs file of their own serve. */
const EXAMPLE_GRAPH = fileURLToPath(new URL("../../examples/agent-graph.ts", import.meta.url));
/** The secret the variant's tokens are signed with, handed to the server as the graphs file's JWT_SECRET. */
const JWT_SECRET = "agentplane-bench-custom-auth-secret-0123456789";

/**
 * The "custom auth" variant of the agent benches, in one place: the same graphs as the plain run
 * plus the example's JWT `Auth` (`auth.path`), and the headers its one user sends instead of the
 * admin key. Benches run it, with encryption at rest on too, beside plain agentplane and report the
 * ratio.
 */
export const CUSTOM_AUTH_VARIANT = {
  /** The label benches report it under. */
  label: "agentplane+auth+aes",
  /**
   * Writes the variant's graphs file into `dir`: `base` (a graphs file; the bundled example graph
   * when undefined) with its graph paths made absolute, `auth.path` and the JWT secret added.
   */
  async graphsFile(base: string | undefined, dir: string): Promise<string> {
    const config = base
      ? (JSON.parse(await readFile(base, "utf8")) as { graphs: Record<string, string>; env?: object })
      : { graphs: { agent: `${EXAMPLE_GRAPH}:graph` } };
    const graphs = Object.fromEntries(
      Object.entries(config.graphs).map(([id, path]) => [id, base ? resolve(dirname(base), path) : path]),
    );
    const file = join(dir, "custom-auth-langgraph.json");
    const variant = {
      ...config,
      graphs,
      env: { ...config.env, JWT_SECRET },
      auth: { path: `${EXAMPLE_AUTH}:auth` },
    };
    await writeFile(file, JSON.stringify(variant, null, 2));
    return file;
  },
  /** What every request of the variant sends: a JWT of one user, valid for a day (beyond any run). */
  headers(): Record<string, string> {
    const token = signHs256({ sub: "bench-user", exp: Math.floor(Date.now() / 1000) + 86_400 }, JWT_SECRET);
    return { authorization: `Bearer ${token}` };
  },
} as const;

/** The cost aim of the variant: at least this share of plain agentplane's throughput. */
export const CUSTOM_AUTH_AIM_RATIO = 0.8;
