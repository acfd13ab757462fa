import { AssistantService } from "../../gen/agentplane/agents/v1/assistant_service_pb.js";
import { CronService } from "../../gen/agentplane/agents/v1/cron_service_pb.js";
import { RunService } from "../../gen/agentplane/agents/v1/run_service_pb.js";
import { StoreService } from "../../gen/agentplane/agents/v1/store_service_pb.js";
import { ThreadService } from "../../gen/agentplane/agents/v1/thread_service_pb.js";
import { SystemService } from "../../gen/agentplane/system/v1/system_service_pb.js";
import type { AuthMode } from "../config.js";
import type { HttpConfig } from "../runtime/graph-config.js";
import type { HttpRouteGroup } from "../runtime/graph-config-http.js";
import type { BoundService } from "./bound-service.js";
import type { HttpAdapter } from "./http-adapter.js";
import type { CorsPolicy } from "./rest/cors.js";

/**
 * What the graphs file's `http` section changes in the HTTP surface: which route groups are served
 * (`http.disable_<group>`) and the CORS policy (`http.cors` merged with AGENTPLANE_CORS_ORIGINS).
 */

/** The services of each route group, by type name: a disabled group is served on no protocol. */
const GROUP_SERVICES: Readonly<Partial<Record<HttpRouteGroup, readonly string[]>>> = {
  assistants: [AssistantService.typeName],
  threads: [ThreadService.typeName],
  // Crons are part of the runs routes (`/runs/crons`), as in the LangGraph servers.
  runs: [RunService.typeName, CronService.typeName],
  store: [StoreService.typeName],
  meta: [SystemService.typeName],
};

/** The REST-only routes of each route group, by path prefix. */
const GROUP_PATHS: Readonly<Partial<Record<HttpRouteGroup, readonly string[]>>> = {
  meta: ["/metrics"],
  ui: ["/ui"],
};

/** `services` without those of the disabled groups. */
export function servedServices(services: readonly BoundService[], http: HttpConfig): BoundService[] {
  const off = new Set((http.disabledGroups ?? []).flatMap((group) => GROUP_SERVICES[group] ?? []));
  return services.filter((bound) => !off.has(bound.service.typeName));
}

/** `adapters` without the routes of the disabled groups. */
export function servedAdapters(adapters: readonly HttpAdapter[], http: HttpConfig): HttpAdapter[] {
  const prefixes = (http.disabledGroups ?? []).flatMap((group) => GROUP_PATHS[group] ?? []);
  if (prefixes.length === 0) return [...adapters];
  const served = (path: string) => !prefixes.some((p) => path === p || path.startsWith(`${p}/`));
  return adapters.map((adapter) => adapter.filter((endpoint) => served(endpoint.path)));
}

/**
 * The CORS policy: the origins of AGENTPLANE_CORS_ORIGINS (or its default) together with those of
 * `http.cors.allow_origins`; the file's methods and headers add to the built-in ones; its
 * credentials and max-age settings apply. `*` in the file is refused with authentication off, as
 * it is in AGENTPLANE_CORS_ORIGINS.
 */
export function corsPolicyFor(origins: readonly string[], auth: AuthMode, http: HttpConfig): CorsPolicy {
  const cors = http.cors;
  if (cors?.allowOrigins?.includes("*") && auth === "none")
    throw new Error(
      'http.cors.allow_origins ["*"] is refused with AGENTPLANE_AUTH=none: any web page open in a browser could act as admin; list the origins that may call',
    );
  return {
    origins: [...new Set([...origins, ...(cors?.allowOrigins ?? [])])],
    refuseUnlisted: auth === "none",
    ...(cors?.allowMethods ? { extraMethods: cors.allowMethods } : {}),
    ...(cors?.allowHeaders ? { extraHeaders: cors.allowHeaders } : {}),
    ...(cors?.exposeHeaders ? { extraExposedHeaders: cors.exposeHeaders } : {}),
    ...(cors?.allowCredentials === undefined ? {} : { allowCredentials: cors.allowCredentials }),
    ...(cors?.maxAgeSeconds === undefined ? {} : { maxAgeSeconds: cors.maxAgeSeconds }),
  };
}
