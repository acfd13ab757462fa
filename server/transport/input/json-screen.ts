import { MAX_JSON_DEPTH } from "./input-limits.js";
import {
  type InputProblem,
  memberNameProblem,
  numberProblem,
  type PathStep,
  pathOf,
  textProblem,
  tooDeep,
} from "./input-problem.js";

/**
 * The first value of a parsed JSON document (or of a google.protobuf.Struct's JsonObject) that the
 * server refuses, or undefined: nesting deeper than {@link MAX_JSON_DEPTH}, a string or member name
 * holding NUL or a lone surrogate, a number that is not finite (`1e999` parses to Infinity).
 *
 * Iterative with an explicit stack, so it is safe on any depth and runs before anything recursive
 * (protobuf decoding, error diagnosis, JSON.stringify) touches the document. `depth` is the nesting
 * level of `value` itself when it sits inside a larger request (a Struct field of a message).
 */
export function findJsonProblem(value: unknown, at?: PathStep, depth = 1): InputProblem | undefined {
  return walkJson(value, at, depth, true);
}

/**
 * {@link findJsonProblem} of `value`, which `JSON.parse` made from `text`, itself decoded from UTF-8.
 * Such text holds no lone surrogate (the decoder replaces bad bytes with U+FFFD), and raw control
 * characters are not JSON: without a `\u` escape in the text, no string or member name can hold
 * what the screen refuses, so only nesting and numbers are checked. Trace ingest screens a few
 * hundred documents per request this way.
 */
export function findDecodedJsonProblem(value: unknown, text: string): InputProblem | undefined {
  return walkJson(value, undefined, 1, text.includes("\\u"));
}

function walkJson(
  value: unknown,
  at: PathStep | undefined,
  depth: number,
  checkTexts: boolean,
): InputProblem | undefined {
  const scalarProblem = checkTexts ? anyScalarProblem : numberOnlyProblem;
  const scalar = scalarProblem(value);
  if (scalar !== undefined) return { path: pathOf(at), reason: scalar };
  if (typeof value !== "object" || value === null) return undefined;
  const pending: [object, PathStep | undefined, number][] = [[value, at, depth]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [container, step, level] = next;
    if (level > MAX_JSON_DEPTH) return { path: pathOf(step), reason: tooDeep };
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) {
        const item: unknown = container[i];
        const problem = scalarProblem(item);
        if (problem !== undefined) return { path: pathOf({ parent: step, key: i }), reason: problem };
        if (typeof item === "object" && item !== null)
          pending.push([item, { parent: step, key: i }, level + 1]);
      }
      continue;
    }
    for (const key of Object.keys(container)) {
      const nameProblem = checkTexts ? memberNameProblem(key) : undefined;
      if (nameProblem !== undefined) return { path: pathOf(step), reason: nameProblem };
      const item: unknown = (container as Record<string, unknown>)[key];
      const problem = scalarProblem(item);
      if (problem !== undefined) return { path: pathOf({ parent: step, key }), reason: problem };
      if (typeof item === "object" && item !== null) pending.push([item, { parent: step, key }, level + 1]);
    }
  }
  return undefined;
}

function numberOnlyProblem(value: unknown): string | undefined {
  return typeof value === "number" ? numberProblem(value) : undefined;
}

function anyScalarProblem(value: unknown): string | undefined {
  if (typeof value === "string") return textProblem(value);
  if (typeof value === "number") return numberProblem(value);
  return undefined;
}

/**
 * Whether JSON text may hold what {@link findJsonProblem} refuses: objects and arrays nested deeper
 * than {@link MAX_JSON_DEPTH}, or a `\u0000` or surrogate (`\uD800`-`\uDFFF`) escape. One pass over
 * the bytes, cheap enough for every JSON RPC body before protobuf-es decodes it (whose own recursion
 * limit and UTF-8 check would refuse such input with messages that name no field). Raw control
 * characters are not valid JSON and raw surrogates not valid UTF-8: those the parser refuses.
 */
export function jsonTextNeedsScreen(bytes: Uint8Array): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === 0x22 /* " */) inString = false;
      else if (c === 0x5c /* \ */) {
        if (bytes[i + 1] === 0x75 /* u */ && suspiciousEscape(bytes, i + 2)) return true;
        i++;
      }
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}

/** Whether the four hex digits at `at` are 0000 or D800 to DFFF. */
function suspiciousEscape(bytes: Uint8Array, at: number): boolean {
  const hex = String.fromCharCode(...bytes.subarray(at, at + 4)).toLowerCase();
  return hex === "0000" || /^d[89a-f]/.test(hex);
}
