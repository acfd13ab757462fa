/**
 * The headers sent with every webhook call, as the operator configures them: a JSON object of header
 * name → value, where a value may take environment variables through `${{ env.NAME }}` templates
 * (the syntax of langgraph.json's `webhooks.headers`). Only variables whose names start with the
 * configured prefix may be read, so a header template cannot leak an unrelated secret of the process
 * (`DATABASE_URL`, `AGENTPLANE_SECRET_KEY`) to a receiver.
 */

/** `${{ env.NAME }}`, spaces optional inside the braces. */
const TEMPLATE = /\$\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
/** An HTTP header name (an RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers the HTTP client sets itself from the request; configuring them would break the call. */
const RESERVED = new Set(["host", "content-length", "transfer-encoding", "connection"]);

/**
 * Parses the headers setting and fills in its templates from `env`. Answers every problem, each a
 * sentence saying what to fix, instead of headers when any entry is wrong.
 */
export function parseWebhookHeaders(
  text: string,
  env: Record<string, string | undefined>,
  envPrefix: string,
): { headers: Record<string, string> } | { problems: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { problems: [`is not valid JSON: ${(error as Error).message}`] };
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    return { problems: ['must be a JSON object of header name → value, such as {"X-Token": "…"}'] };
  return fillWebhookHeaders(raw as Record<string, unknown>, env, envPrefix);
}

/**
 * Checks header entries (name → value) and fills in their templates from `env`: the headers, or
 * every problem, each a sentence naming its header. Problems never quote a value (they are secrets).
 */
export function fillWebhookHeaders(
  raw: Readonly<Record<string, unknown>>,
  env: Record<string, string | undefined>,
  envPrefix: string,
): { headers: Record<string, string> } | { problems: string[] } {
  const problems: string[] = [];
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (!HEADER_NAME.test(name)) {
      problems.push(`header name ${JSON.stringify(name)} is not a valid HTTP header name`);
      continue;
    }
    if (RESERVED.has(name.toLowerCase())) {
      problems.push(`header ${name} is set by the HTTP client itself and cannot be configured`);
      continue;
    }
    if (typeof value !== "string") {
      problems.push(`header ${name} must have a string value`);
      continue;
    }
    const filled = value.replace(TEMPLATE, (_, variable: string) => {
      if (!variable.startsWith(envPrefix)) {
        problems.push(
          `header ${name} reads ${variable}, but header templates may only read variables starting with ${envPrefix}`,
        );
        return "";
      }
      const found = env[variable];
      if (found === undefined || found === "") {
        problems.push(`header ${name} reads ${variable}, which is not set`);
        return "";
      }
      return found;
    });
    if (/[\r\n\0]/.test(filled)) {
      problems.push(`header ${name} has a line break or NUL in its value`);
      continue;
    }
    headers[name] = filled;
  }
  return problems.length > 0 ? { problems } : { headers };
}

/** The environment variables the `${{ env.NAME }}` templates of `value` read, in order. */
export function templateVariables(value: string): string[] {
  return [...value.matchAll(TEMPLATE)].map((match) => match[1] ?? "");
}
