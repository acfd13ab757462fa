import type { DescService } from "@bufbuild/protobuf";

/*
 * Which APIs ignore request fields and query parameters they do not know (design.md, decision 14).
 * The one place this is declared: the REST transcoder asks it per service, the A2A and MCP adapters
 * are lenient because they serve the agents package.
 *
 * The LangGraph- and LangSmith-compatible APIs follow another system's wire contract, whose official
 * clients add fields in every release: the reference servers ignore what they do not know, so a
 * newer client keeps working against an older server. A service is lenient by being in one of
 * these packages (a new Agent Server service gets it by being in agentplane.agents).
 *
 * agentplane's own APIs (IAM, usage, bulk export, system) have no other system's clients to follow:
 * a field they do not know is a typo, refused with 422 naming it.
 */

/** Packages whose services follow the LangGraph Agent Server's or LangSmith's wire contract. */
const COMPATIBLE_PACKAGES: readonly string[] = ["agentplane.agents.", "agentplane.tracing."];

/** Services inside those packages that are agentplane's own API, and stay strict. */
const OWN_SERVICES: ReadonlySet<string> = new Set([
  // Granular usage is agentplane's own report: no LangSmith client sends it fields.
  "agentplane.tracing.v1.UsageService",
]);

/** True when `service` ignores (and counts) request members it does not know instead of refusing them. */
export function ignoresUnknownFields(service: DescService): boolean {
  return (
    COMPATIBLE_PACKAGES.some((prefix) => service.typeName.startsWith(prefix)) &&
    !OWN_SERVICES.has(service.typeName)
  );
}

/**
 * Receives the request members a lenient API ignored: `area` names the API (a service's full name,
 * or `a2a` / `mcp`), `names` the members (dotted for nested fields, as clients spelled them).
 */
export type IgnoredFieldsSink = (area: string, names: readonly string[]) => void;
