/**
 * google.api.http path templates (see proto/google/api/http.proto):
 *
 *     Template = "/" Segments [ Verb ] ;
 *     Segments = Segment { "/" Segment } ;
 *     Segment  = "*" | "**" | LITERAL | Variable ;
 *     Variable = "{" FieldPath [ "=" Segments ] "}" ;
 *     Verb     = ":" LITERAL ;
 *
 * Templates are compiled once at start-up into a token list; a request path is split into raw
 * (still percent-encoded) segments once and matched against each template without regular
 * expressions. Captured values are decoded only for the route that matched.
 */

interface Token {
  /** `*` matches one non-empty segment, `**` the rest of the path (zero or more segments). */
  readonly kind: "literal" | "*" | "**";
  /** The literal text (for `Literal`). */
  readonly text: string;
}

/** A `{field.path=...}` variable of a template. */
export interface TemplateVariable {
  /** The dotted proto field path, e.g. `book.name`. */
  readonly fieldPath: string;
  /**
   * True for `{var=foo/*}` or `{var=**}`: the value spans several segments, so `/` is kept and
   * `%2F` is left encoded when decoding (google.api.http's rule for multi-segment variables).
   */
  readonly multiSegment: boolean;
  /** Index of the first segment the variable covers. */
  readonly start: number;
  /** Index after the last segment; `undefined` when the variable ends in `**` (to the path end). */
  readonly end: number | undefined;
}

/** A compiled path template. */
export interface PathTemplate {
  /** The template as written in the proto, e.g. `/v1/{name=shelves/*}:publish`. */
  readonly text: string;
  /** The variables in order of appearance; `match` returns one capture per variable. */
  readonly variables: readonly TemplateVariable[];
  /** The custom verb without its colon, or `undefined`. */
  readonly verb: string | undefined;
  /** Literal segments plus the verb: the first specificity criterion (more wins). */
  readonly literalCount: number;
  /** `*` and `**` segments, inside variables or not: fewer wins among equally literal templates. */
  readonly wildcardCount: number;
  /** True when the template ends in `**`. */
  readonly hasDoubleWildcard: boolean;
  /** The template with variable names erased, e.g. `/v1/*:publish`; equal shapes match equal paths. */
  readonly shape: string;
  /**
   * Matches raw segments from {@link splitPath}; returns the raw (still percent-encoded) value of
   * each variable, or `undefined` when the path does not match.
   */
  match(segments: readonly string[]): string[] | undefined;
}

/**
 * Splits the path part of a request URL (no query string) into raw segments. `/` alone gives no
 * segments; a path that does not start with `/` gives `undefined` (it can match no template).
 */
export function splitPath(path: string): string[] | undefined {
  if (path.charCodeAt(0) !== 47 /* "/" */) return undefined;
  return path.length === 1 ? [] : path.slice(1).split("/");
}

/**
 * Decodes a captured value: percent-decoding for a single-segment variable; for a multi-segment
 * variable the `/` separators are kept and `%2F` stays encoded, as google.api.http specifies.
 * Returns `undefined` when the value holds a malformed percent-escape.
 */
export function decodeVariable(raw: string, multiSegment: boolean): string | undefined {
  if (!raw.includes("%")) return raw;
  try {
    if (!multiSegment) return decodeURIComponent(raw);
    const parts = raw.split(/(%2F)/i);
    for (let i = 0; i < parts.length; i += 2) parts[i] = decodeURIComponent(parts[i]!);
    return parts.join("");
  } catch {
    return undefined;
  }
}

/**
 * Orders templates from most to least specific: more literal segments first, then fewer
 * wildcards, where a `**` (any number of segments) counts as more than any number of `*`.
 */
export function compareSpecificity(a: PathTemplate, b: PathTemplate): number {
  return (
    b.literalCount - a.literalCount ||
    Number(a.hasDoubleWildcard) - Number(b.hasDoubleWildcard) ||
    a.wildcardCount - b.wildcardCount
  );
}

/** Compiles a template; throws an `Error` naming the problem when the template is malformed. */
export function parsePathTemplate(text: string): PathTemplate {
  const fail = (why: string): never => {
    throw new Error(`invalid path template "${text}": ${why}`);
  };
  if (!text.startsWith("/")) fail("it must start with /");
  const { path, verb } = splitVerb(text);
  if (verb !== undefined && !isLiteral(verb)) fail(`the verb ":${verb}" is not a literal`);

  const tokens: Token[] = [];
  const variables: TemplateVariable[] = [];
  // The root path "/" has no segments at all.
  for (const part of path === "/" ? [] : splitTopLevel(path.slice(1), fail)) {
    if (!part.startsWith("{")) {
      tokens.push(parseSegment(part, fail));
      continue;
    }
    if (!part.endsWith("}")) fail(`unterminated variable "${part}"`);
    const inner = part.slice(1, -1);
    const eq = inner.indexOf("=");
    const fieldPath = eq < 0 ? inner : inner.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(fieldPath)) {
      fail(`"${fieldPath}" is not a field path`);
    }
    if (variables.some((v) => v.fieldPath === fieldPath)) fail(`variable "${fieldPath}" appears twice`);
    const inside: Token[] = eq < 0 ? [{ kind: "*", text: "*" }] : parseSegments(inner.slice(eq + 1), fail);
    const start = tokens.length;
    tokens.push(...inside);
    const endsInDouble = inside[inside.length - 1]!.kind === "**";
    variables.push({
      fieldPath,
      multiSegment: inside.length > 1 || endsInDouble,
      start,
      end: endsInDouble ? undefined : tokens.length,
    });
  }
  const doubleAt = tokens.findIndex((t) => t.kind === "**");
  if (doubleAt >= 0 && doubleAt !== tokens.length - 1) fail("** must be the last segment");

  const literalTokens = tokens.filter((t) => t.kind === "literal").length;
  const hasDoubleWildcard = doubleAt >= 0;
  return {
    text,
    variables,
    verb,
    literalCount: literalTokens + (verb === undefined ? 0 : 1),
    wildcardCount: tokens.length - literalTokens,
    hasDoubleWildcard,
    shape: `/${tokens.map((t) => t.text).join("/")}${verb === undefined ? "" : `:${verb}`}`,
    match: createMatcher(tokens, variables, verb, hasDoubleWildcard),
  };
}

function createMatcher(
  tokens: readonly Token[],
  variables: readonly TemplateVariable[],
  verb: string | undefined,
  hasDoubleWildcard: boolean,
): (segments: readonly string[]) => string[] | undefined {
  const fixed = hasDoubleWildcard ? tokens.length - 1 : tokens.length;
  const verbSuffix = verb === undefined ? undefined : `:${verb}`;
  return (segments) => {
    const count = segments.length;
    if (hasDoubleWildcard ? count < fixed : count !== fixed) return undefined;
    let last = count > 0 ? segments[count - 1]! : "";
    if (verbSuffix !== undefined) {
      if (count === 0 || !last.endsWith(verbSuffix)) return undefined;
      last = last.slice(0, -verbSuffix.length);
    }
    const at = (i: number): string => (i === count - 1 ? last : segments[i]!);
    for (let i = 0; i < fixed; i++) {
      const token = tokens[i]!;
      const segment = at(i);
      if (token.kind === "literal" ? segment !== token.text : segment === "") return undefined;
    }
    for (let i = fixed; i < count; i++) if (at(i) === "") return undefined;
    const captures: string[] = new Array(variables.length);
    for (let v = 0; v < variables.length; v++) {
      const { start, end = count } = variables[v]!;
      if (end - start === 1) {
        captures[v] = at(start);
        continue;
      }
      const parts: string[] = [];
      for (let i = start; i < end; i++) parts.push(at(i));
      captures[v] = parts.join("/");
    }
    return captures;
  };
}

function splitVerb(text: string): { path: string; verb: string | undefined } {
  const colon = text.lastIndexOf(":");
  if (colon > text.lastIndexOf("}") && colon > text.lastIndexOf("/")) {
    return { path: text.slice(0, colon), verb: text.slice(colon + 1) };
  }
  return { path: text, verb: undefined };
}

/** Splits on `/` outside `{...}`. */
function splitTopLevel(path: string, fail: (why: string) => never): string[] {
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (c === "{") {
      if (depth > 0) fail("variables cannot nest");
      depth = 1;
    } else if (c === "}") {
      if (depth === 0) fail("unbalanced }");
      depth = 0;
    } else if (c === "/" && depth === 0) {
      parts.push(path.slice(from, i));
      from = i + 1;
    }
  }
  if (depth > 0) fail("unterminated variable");
  parts.push(path.slice(from));
  return parts;
}

function parseSegments(text: string, fail: (why: string) => never): Token[] {
  return text.split("/").map((s) => parseSegment(s, fail));
}

function parseSegment(segment: string, fail: (why: string) => never): Token {
  if (segment === "*") return { kind: "*", text: "*" };
  if (segment === "**") return { kind: "**", text: "**" };
  if (!isLiteral(segment)) fail(`"${segment}" is not a valid segment`);
  return { kind: "literal", text: segment };
}

function isLiteral(text: string): boolean {
  return text !== "" && !/[{}*/:]/.test(text);
}
