import {
  type DescField,
  type DescMessage,
  fromJson,
  type JsonObject,
  type JsonReadOptions,
  type JsonValue,
  type Message,
  type Registry,
} from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { takeUnknownFields } from "../../services/unknown-fields.js";
import { readJsonBody } from "../body/json-body.js";
import { PROTOBUF_JSON_RECURSION_LIMIT } from "../input/input-limits.js";
import { textProblem } from "../input/input-problem.js";
import { describeElement, type StringConverter, stringConverter } from "./field-value.js";
import { malformedRequestError } from "./http-status.js";
import { diagnoseMessage, echo, isJsonObject, type JsonProblem } from "./json-diagnosis.js";
import type { NodeServerRequest } from "./node-types.js";
import { decodeVariable } from "./path-template.js";
import { parseQuery } from "./query-string.js";
import type { Route } from "./route-table.js";

/**
 * Builds the request message of one route from an HTTP request: the JSON body (per the rule's
 * `body`), the path variables (`captures`, raw, from the route's template) and the query string
 * (without `?`). Throws `ConnectError`s whose messages say what to fix. A lenient decoder adds the
 * body members and query parameters it ignored to `ignored`.
 */
export type RequestDecoder = (
  req: NodeServerRequest,
  captures: readonly string[],
  query: string,
  ignored?: string[],
) => Promise<Message>;

/** Options of {@link createRequestDecoder}. */
export interface RequestDecoderOptions {
  /**
   * Ignore body members and query parameters that name no field (design.md, decision 14) instead of
   * refusing them; a known field given wrongly is still refused.
   */
  readonly lenient?: boolean;
}

/** A resolved query parameter or path variable: where its value goes and how to convert it. */
interface FieldTarget {
  /** Proto field names from the request message down to the field. */
  readonly keys: readonly string[];
  /** The same fields' JSON (lowerCamelCase) names, to fold a body's camelCase member into place. */
  readonly jsonNames: readonly string[];
  /** The dotted proto path, for messages. */
  readonly dotted: string;
  /** The last field. */
  readonly leaf: DescField;
  readonly convert: StringConverter;
}

/**
 * Resolved query parameter names are cached per route; the bound keeps a client from growing the
 * cache without limit through recursive messages (`a.a.a...` is valid for a self-nesting type).
 */
const maxCachedQueryNames = 256;

/** Compiles the decoder of `route`; everything that does not depend on the request is done here. */
export function createRequestDecoder(
  route: Route,
  registry: Registry,
  options: RequestDecoderOptions = {},
): RequestDecoder {
  const input = route.method.input;
  const lenient = options.lenient === true;
  const readOptions: Partial<JsonReadOptions> = { registry, recursionLimit: PROTOBUF_JSON_RECURSION_LIMIT };
  const where = `${route.httpMethod} ${route.template.text}`;
  const bodyField = route.body.kind === "field" ? route.body.field : undefined;
  const pathTargets = route.pathBindings.map(({ fields }) => target(fields));
  const pathDotted = new Set(pathTargets.map((t) => t.dotted));
  const queryNames = input.fields
    .filter((f) => f !== bodyField && !pathDotted.has(f.name))
    .map((f) => f.name)
    .join(", ");
  const queryCache = new Map<string, FieldTarget>();

  const readBody = async (req: NodeServerRequest, ignored: string[] | undefined): Promise<JsonObject> => {
    if (route.body.kind === "none") return {};
    const body = await readJsonBody(req, bodyField?.name);
    if (route.body.kind === "field") {
      if (body === undefined) return {};
      if (lenient && bodyField?.message) report(ignored, takeUnknownFields(bodyField.message, body));
      return { [route.body.field.name]: body };
    }
    if (body === undefined) return {};
    if (!isJsonObject(body)) throw invalid(`the request body must be a JSON object, got ${echo(body)}`);
    if (lenient) report(ignored, takeUnknownFields(input, body));
    return body;
  };

  /** A query parameter naming no field: ignored when lenient, else refused with `refusal`. */
  const unknownQuery = (refusal: string): typeof IGNORED => {
    if (lenient) return IGNORED;
    throw invalid(refusal);
  };

  const resolveQuery = (name: string): FieldTarget | typeof IGNORED => {
    const cached = queryCache.get(name);
    if (cached) return cached;
    if (route.body.kind === "all") {
      if (lenient && !findField(input, name.split(".", 1)[0]!)) return IGNORED;
      throw invalid(
        `query parameter "${name}" is not accepted: ${where} takes all its input from the JSON body`,
      );
    }
    const fields: DescField[] = [];
    let message: DescMessage = input;
    const parts = name.split(".");
    for (const [i, part] of parts.entries()) {
      const field = findField(message, part);
      if (!field) {
        return unknownQuery(
          i === 0
            ? `unknown query parameter "${name}"; ${where} accepts: ${queryNames || "no query parameters"}`
            : `unknown query parameter "${name}": "${fields.map((f) => f.name).join(".")}" has no field "${part}"`,
        );
      }
      fields.push(field);
      if (i === parts.length - 1) break;
      if (field.fieldKind !== "message" || stringConverter(field)) {
        throw invalid(`query parameter "${name}": "${field.name}" has no fields to set with a dotted name`);
      }
      message = field.message;
    }
    const leaf = fields[fields.length - 1]!;
    if (!stringConverter(leaf)) {
      const hint =
        leaf.fieldKind === "message"
          ? `set its fields instead, such as "${name}.${leaf.message.fields[0]?.name ?? "field"}"`
          : "it can only be sent in a JSON body";
      throw invalid(`query parameter "${name}" cannot be given as a string: ${hint}`);
    }
    if (bodyField && fields[0] === bodyField) {
      throw invalid(
        `query parameter "${name}" is not accepted: ${where} reads "${bodyField.name}" from the body`,
      );
    }
    const resolved = target(fields);
    if (pathDotted.has(resolved.dotted)) {
      throw invalid(`query parameter "${name}" is not accepted: ${where} sets it from the URL path`);
    }
    if (queryCache.size < maxCachedQueryNames) queryCache.set(name, resolved);
    return resolved;
  };

  /**
   * Says which field `fromJson` refused and why. It only runs on input the screen accepted (at most
   * MAX_JSON_DEPTH levels), and whatever goes wrong while it looks, the caller still gets a 422
   * that is true if unspecific.
   */
  const explain = (json: JsonObject, error: unknown): ConnectError => {
    try {
      return diagnose(json, error);
    } catch {
      return invalid(`the request does not match what ${where} accepts`);
    }
  };

  const diagnose = (json: JsonObject, error: unknown): ConnectError => {
    if (bodyField && json[bodyField.name] !== undefined) {
      const body = json[bodyField.name]!;
      const problem = bodyField.message
        ? diagnoseMessage(bodyField.message, body, readOptions)
        : diagnoseMessage(input, { [bodyField.name]: body }, readOptions);
      if (problem) return invalid(inBody(bodyField.message ? problem : { ...problem, path: "" }));
      const { [bodyField.name]: _, ...rest } = json;
      const urlProblem = diagnoseMessage(input, rest, readOptions);
      if (urlProblem) return invalid(inUrl(urlProblem, pathDotted));
    } else {
      const problem = diagnoseMessage(input, json, readOptions);
      if (problem && route.body.kind === "all" && !pathDotted.has(problem.path))
        return invalid(inBody(problem));
      if (problem) return invalid(inUrl(problem, pathDotted));
    }
    return invalid(`the request is invalid: ${reasonOf(error)}`);
  };

  return async (req, captures, query, ignored) => {
    const json = await readBody(req, ignored);
    for (let i = 0; i < pathTargets.length; i++) {
      const t = pathTargets[i]!;
      const raw = decodeVariable(captures[i]!, route.pathBindings[i]!.variable.multiSegment);
      if (raw === undefined)
        throw malformedRequestError(`path parameter "${t.dotted}" is not validly percent-encoded`);
      const problem = textProblem(raw);
      if (problem) throw invalid(`path parameter "${t.dotted}" ${problem}`);
      const value = t.convert(raw);
      if (value === undefined) throw invalid(mustBe(`path parameter "${t.dotted}"`, t.leaf, raw));
      setField(json, t, value, true);
    }
    if (query !== "") {
      for (const [name, raw] of parseQuery(query)) {
        const t = resolveQuery(name);
        if (t === IGNORED) {
          ignored?.push(name);
          continue;
        }
        const value = t.convert(raw);
        if (value === undefined) throw invalid(mustBe(`query parameter "${name}"`, t.leaf, raw));
        if (!setField(json, t, value, false))
          throw invalid(`query parameter "${name}" is given more than once`);
      }
    }
    try {
      return fromJson(input, json, readOptions);
    } catch (error) {
      throw explain(json, error);
    }
  };
}

/** Adds the names of ignored members to the caller's list, when it keeps one. */
function report(ignored: string[] | undefined, names: readonly string[]): void {
  if (ignored && names.length > 0) ignored.push(...names);
}

/** What {@link createRequestDecoder}'s query resolution answers for a parameter it ignores. */
const IGNORED = Symbol("ignored query parameter");

function target(fields: readonly DescField[]): FieldTarget {
  const leaf = fields[fields.length - 1]!;
  return {
    keys: fields.map((f) => f.name),
    jsonNames: fields.map((f) => f.jsonName),
    dotted: fields.map((f) => f.name).join("."),
    leaf,
    // Route validation (path variables) and resolveQuery only build targets for convertible fields.
    convert: stringConverter(leaf)!,
  };
}

/**
 * Sets a converted value at `t` inside `json`, creating intermediate objects. A repeated field
 * collects values. With `override`, the value replaces what the body had (path variables win
 * over the body, under either field name); without it, setting a singular field twice fails.
 * Returns false only in that failure case.
 */
function setField(json: JsonObject, t: FieldTarget, value: JsonValue, override: boolean): boolean {
  let obj = json;
  const last = t.keys.length - 1;
  for (let i = 0; i <= last; i++) {
    const key = t.keys[i]!;
    const jsonName = t.jsonNames[i]!;
    if (jsonName !== key && obj[jsonName] !== undefined) {
      if (i === last) delete obj[jsonName];
      else if (obj[key] === undefined) {
        obj[key] = obj[jsonName]!;
        delete obj[jsonName];
      }
    }
    if (i === last) break;
    const next = obj[key];
    if (isJsonObject(next)) {
      obj = next;
    } else if (next === undefined || next === null) {
      const created: JsonObject = {};
      obj[key] = created;
      obj = created;
    } else {
      // A non-object here is a body error that fromJson reports; the value has nowhere to go.
      return true;
    }
  }
  const key = t.keys[last]!;
  const current = obj[key];
  if (t.leaf.fieldKind === "list") {
    if (Array.isArray(current)) current.push(value);
    else obj[key] = [value];
  } else if (current !== undefined && !override) {
    return false;
  } else {
    obj[key] = value;
  }
  return true;
}

function findField(message: DescMessage, name: string): DescField | undefined {
  return message.fields.find((f) => f.name === name || f.jsonName === name);
}

function mustBe(subject: string, leaf: DescField, raw: string): string {
  return `${subject} must be ${describeElement(leaf)}, got ${JSON.stringify(raw)}`;
}

function inBody(problem: JsonProblem): string {
  return problem.path === ""
    ? `the request body ${problem.message}`
    : `field "${problem.path}" of the request body ${problem.message}`;
}

function inUrl(problem: JsonProblem, pathDotted: ReadonlySet<string>): string {
  const kind = pathDotted.has(problem.path) ? "path parameter" : "query parameter";
  return `${kind} "${problem.path}" ${problem.message}`;
}

/**
 * protobuf-es's reason without its "cannot decode <type name> from JSON: " prefix, led by the
 * proto name of the field when protobuf-es says which (e.g. a field given as both `min_score` and
 * `minScore` is "set multiple times").
 */
function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const marker = " from JSON: ";
  const at = message.lastIndexOf(marker);
  const reason = at < 0 ? message : message.slice(at + marker.length);
  const field = fieldOfCause(error);
  return field === undefined ? reason : `field "${field}" ${reason}`;
}

/** The field name protobuf-es's FieldError carries as its `cause`, if any. */
function fieldOfCause(error: unknown): string | undefined {
  const cause = error instanceof Error ? (error.cause as { field?: unknown } | undefined) : undefined;
  if (typeof cause?.field !== "function") return undefined;
  const field: unknown = cause.field();
  return typeof field === "object" && field !== null && "name" in field ? String(field.name) : undefined;
}

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}
