import { Code, ConnectError } from "@connectrpc/connect";
import { MAX_JSON_DEPTH } from "./input-limits.js";

/**
 * What the input screens report: where in the request the first refused value is, and why, in
 * words that say what to change. Paths use proto field names (as REST JSON does), `[i]` for list
 * items, and `.key` or `["key"]` (escaped, for keys that are not plain words) for members.
 */

/** One step from a value to its container: a field or member name, or a list index. */
export interface PathStep {
  /** The step towards the root; undefined for a top-level field. */
  readonly parent: PathStep | undefined;
  readonly key: string | number;
}

/** A refused value: where it is and the rest of the sentence after its name. */
export interface InputProblem {
  /** Path steps from the root, innermost last; empty for the request itself. */
  readonly path: readonly (string | number)[];
  /**
   * What is wrong, e.g. `contains the NUL character (\u0000), which cannot be stored`. For a member
   * name, the sentence starts with the (escaped) name.
   */
  readonly reason: string;
}

/** Matches the start of a NUL or a surrogate code unit: nothing else needs a closer look. */
const suspiciousText = /[\0\uD800-\uDFFF]/;
/** A surrogate code unit that is not half of a pair. */
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Member names shown without quotes in a path. */
const plainName = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/**
 * Why `text` cannot be stored in a text or jsonb column, or undefined when it can: Postgres refuses
 * the NUL character in both, and a lone UTF-16 surrogate is not a character at all (it cannot be
 * encoded as UTF-8).
 */
export function textProblem(text: string): string | undefined {
  if (!suspiciousText.test(text)) return undefined;
  if (text.includes("\0")) return "contains the NUL character (\\u0000), which cannot be stored";
  const lone = loneSurrogate.exec(text);
  if (lone === null) return undefined;
  const unit = lone[0].charCodeAt(0).toString(16);
  return `contains an unpaired UTF-16 surrogate (\\u${unit}), which is not valid Unicode text and cannot be stored; send complete characters`;
}

/** Why a number cannot be stored (NaN and infinities have no JSON or SQL form here), or undefined. */
export function numberProblem(value: number): string | undefined {
  return Number.isFinite(value) ? undefined : `must be a finite number, got ${String(value)}`;
}

/** The reason given for a value nested deeper than {@link MAX_JSON_DEPTH}. */
export const tooDeep = `nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep, the most a request may`;

/** The problem of member name `name`, or undefined when it is fine. */
export function memberNameProblem(name: string): string | undefined {
  const problem = textProblem(name);
  return problem === undefined ? undefined : `has a member name ${JSON.stringify(name)} that ${problem}`;
}

/** The steps from the root down to `step`. */
export function pathOf(step: PathStep | undefined): (string | number)[] {
  const path: (string | number)[] = [];
  for (let at = step; at !== undefined; at = at.parent) path.push(at.key);
  return path.reverse();
}

/** Most steps a path shows; a longer one (a deep value) is cut, so an error stays one short line. */
const maxShownSteps = 8;

/** Renders a path for a message: `metadata.tags[2]`, `config["a b"]`. */
export function formatPath(path: readonly (string | number)[]): string {
  let text = "";
  for (const [i, key] of path.entries()) {
    if (i === maxShownSteps) return `${text}…`;
    if (typeof key === "number") text += `[${key}]`;
    else if (plainName.test(key)) text += i === 0 ? key : `.${key}`;
    else text += `[${JSON.stringify(key)}]`;
  }
  return text;
}

/**
 * The whole sentence: `field "a.b" contains …`, or `<root> …` for the root value itself. `prefix` is
 * the path of the value inside the request (the field a REST body maps to).
 */
export function describeProblem(problem: InputProblem, prefix = "", root = "the request"): string {
  const path = formatPath(problem.path);
  const where =
    prefix === "" || path === "" || path.startsWith("[") ? `${prefix}${path}` : `${prefix}.${path}`;
  return where === "" ? `${root} ${problem.reason}` : `field "${where}" ${problem.reason}`;
}

/** The INVALID_ARGUMENT (REST 422) that reports `problem`. */
export function problemError(problem: InputProblem, prefix?: string): ConnectError {
  return new ConnectError(describeProblem(problem, prefix), Code.InvalidArgument);
}
