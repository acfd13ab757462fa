import { Code, ConnectError } from "@connectrpc/connect";
import type { AdapterRoute, HttpAdapter } from "./http-adapter.js";

/** Every method a LangSmith client may use on these paths. */
const ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const;

/**
 * The LangSmith API areas agentplane does not serve, each with the path prefixes the `langsmith`
 * SDK calls for it (its classic client and its v2 resources). A request under one of them gets a
 * 404 whose detail names the area, so a user sees "not supported" rather than a missing route.
 */
const OUT_OF_SCOPE: readonly { readonly area: string; readonly paths: readonly string[] }[] = [
  { area: "datasets", paths: ["/api/v1/datasets/**", "/api/v2/datasets/**"] },
  { area: "examples", paths: ["/api/v1/examples/**"] },
  {
    area: "annotation queues",
    paths: ["/api/v1/annotation-queues/**", "/api/v1/platform/annotation-queues/**"],
  },
  {
    area: "prompts",
    paths: ["/api/v1/prompts/**", "/api/v1/repos/**", "/api/v1/commits/**", "/api/v1/likes/**"],
  },
  { area: "sandboxes", paths: ["/api/v2/sandboxes/**"] },
  {
    area: "sharing",
    paths: [
      "/api/v1/runs/{run_id}/share",
      "/api/v2/runs/{run_id}/share",
      "/api/v1/public/**",
      "/api/v2/public/**",
    ],
  },
];

/** The routes of the areas agentplane does not serve, for every method. */
export const OUT_OF_SCOPE_ROUTES: readonly AdapterRoute[] = OUT_OF_SCOPE.flatMap(({ paths }) =>
  paths.map((path) => ({ methods: ALL_METHODS, path })),
);

/** Answers every request under an unserved LangSmith area with 404 and the area's name. */
export function createOutOfScopeAdapter(): HttpAdapter {
  return OUT_OF_SCOPE.flatMap(({ area, paths }) =>
    paths.map((path) => ({
      methods: ALL_METHODS,
      path,
      serve: async () => {
        throw new ConnectError(
          `${area} are not supported by agentplane: it serves LangSmith's tracing, feedback and usage APIs only`,
          Code.NotFound,
        );
      },
    })),
  );
}
