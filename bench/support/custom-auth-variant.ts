import { fileURLToPath } from "node:url";
import { signHs256 } from "../../server/runtime/example/custom-auth/hs256-jwt.js";

/**
 * The "custom auth" variant of the agent benches, in one place: the graphs file (the bundled
 * example graph with the example's JWT `Auth`: owner stamped on create, owner filter on every read)
 * and the headers its one user sends. Benches run it beside plain agentplane and report the ratio.
 */
export const CUSTOM_AUTH_VARIANT = {
  /** The label benches report it under. */
  label: "agentplane+auth",
  /** The graphs file the variant's server runs with (AGENTPLANE_CONFIG). */
  graphConfigPath: fileURLToPath(new URL("./custom-auth/langgraph.json", import.meta.url)),
  /** What every request of the variant sends instead of the admin key: a JWT of one user. */
  headers(): Record<string, string> {
    // The secret is the graphs file's JWT_SECRET; the token outlives any bench run (a day).
    const token = signHs256(
      { sub: "bench-user", exp: Math.floor(Date.now() / 1000) + 86_400 },
      "agentplane-bench-custom-auth-secret-0123456789",
    );
    return { authorization: `Bearer ${token}` };
  },
} as const;

/** The cost aim of the variant: at least this share of plain agentplane's throughput. */
export const CUSTOM_AUTH_AIM_RATIO = 0.8;
