/**
 * Agent addresses: where langsmith 0.12 sends runs instead of a project
 * (`address: "lrn:agents/{id}/environments/{env}"` on a run, or the `Langsmith-Agent-Id` and
 * `Langsmith-Agent-Environment` headers of its OTel exporter). Such runs land in the tracing project
 * named for the agent and environment, created on first use like any project named by a run.
 */

/** The environments an agent address names (lowercase, as the SDKs send them). */
export const AGENT_ENVIRONMENTS = ["local", "development", "staging", "production"] as const;

/** An agent id: a DNS label (lowercase letters, digits and hyphens, 1 to 63, a letter first), as LangSmith requires. */
const AGENT_ID = /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;
const LRN = /^lrn:agents\/([^/]+)\/environments\/([^/]+)$/;

/** What an address that cannot be read is told. */
const ADDRESS_FORM =
  'an agent address is "lrn:agents/<agent id>/environments/<local|development|staging|production>", the agent id 1 to 63 lowercase letters, digits or hyphens starting with a letter';

/** The project of an agent and environment: `<agent id>/<environment>`. */
export function agentProjectName(agentId: string, environment: string): string {
  return `${agentId}/${environment.toLowerCase()}`;
}

/**
 * The project name of an agent and environment given apart, or an error message naming what is
 * wrong.
 */
export function agentProject(agentId: string, environment: string): { name: string } | { error: string } {
  const env = environment.trim().toLowerCase();
  if (!AGENT_ID.test(agentId))
    return { error: `agent id ${JSON.stringify(agentId)} is not valid: ${ADDRESS_FORM}` };
  if (!(AGENT_ENVIRONMENTS as readonly string[]).includes(env))
    return { error: `agent environment ${JSON.stringify(environment)} is not valid: ${ADDRESS_FORM}` };
  return { name: agentProjectName(agentId, env) };
}

/** The project name of an `lrn:agents/…` address, or an error message. */
export function projectOfAddress(address: string): { name: string } | { error: string } {
  const match = LRN.exec(address);
  if (!match) return { error: `address ${JSON.stringify(address)} is not valid: ${ADDRESS_FORM}` };
  return agentProject(match[1] as string, match[2] as string);
}
