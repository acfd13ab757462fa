import type { JsonValue } from "@bufbuild/protobuf";
import { problemError } from "../input/input-problem.js";
import { findJsonProblem } from "../input/json-screen.js";
import { malformedRequestError } from "../rest/http-status.js";
import type { NodeServerRequest } from "../rest/node-types.js";
import { requestBytes } from "./request-body.js";

/**
 * Reads, parses and screens a JSON request body (`Content-Encoding: gzip` or identity). Returns
 * `undefined` for an empty body. The content type is not checked: curl's `-d` sends
 * `application/x-www-form-urlencoded` and `fetch` with a string body sends `text/plain`, and both
 * carry JSON in practice. V8's JSON.parse is iterative, so any nesting parses; the input screen then
 * refuses what the server does not store (too deep, NUL, lone surrogates, non-finite numbers) before
 * anything recursive sees the value.
 *
 * Throws a `ConnectError`: 400-tagged for malformed JSON or gzip data, 413-tagged over the body
 * limit, 415-tagged for an unsupported content encoding, INVALID_ARGUMENT (422) from the screen,
 * whose message names the field (`fieldPath` prefixes the path when the body is one field).
 */
export async function readJsonBody(
  req: NodeServerRequest,
  fieldPath?: string,
): Promise<JsonValue | undefined> {
  const bytes = await requestBytes(req);
  if (bytes.length === 0) return undefined;
  let value: JsonValue;
  try {
    value = JSON.parse(bytes.toString("utf8")) as JsonValue;
  } catch (error) {
    throw malformedRequestError(`the request body is not valid JSON: ${(error as Error).message}`);
  }
  const problem = findJsonProblem(value);
  if (problem) throw problemError(problem, fieldPath);
  return value;
}
