import { FilterError } from "./filter-error.js";

/** The kinds of token of the filter language. */
export type TokenKind =
  | "("
  | ")"
  | "["
  | "]"
  | ","
  | "identifier"
  | "string"
  | "number"
  | "duration"
  | "true"
  | "false"
  | "null"
  | "end";

/** One token, with where it starts in the filter text. */
export interface Token {
  readonly kind: TokenKind;
  /** 0-based offset of the token's first character. */
  readonly position: number;
  /** The source text of the token (empty for `end`). */
  readonly text: string;
  /**
   * The decoded value: the unquoted text of a string, the number of a number, the seconds of a
   * duration; undefined for the other kinds.
   */
  readonly value?: string | number;
}

/** Duration units a bare or quoted duration may use, in seconds. */
export const DURATION_UNITS: Readonly<Record<string, number>> = {
  ms: 0.001,
  s: 1,
  m: 60,
  h: 3600,
  d: 86_400,
};

const PUNCTUATION = new Set(["(", ")", "[", "]", ","]);
const KEYWORDS = new Set(["true", "false", "null"]);
const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const UNIT = /[A-Za-z]+/y;
const ESCAPES: Readonly<Record<string, string>> = { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f" };

/**
 * Splits filter text into tokens, ending with an `end` token. Strings take double or single quotes
 * with backslash escapes (`\"`, `\'`, `\\`, `\n`, `\t`, `\uXXXX`); a number directly followed by a
 * unit (`5s`, `1.5m`, `200ms`, `2h`, `1d`) is a duration. Throws {@link FilterError} on a character
 * that starts no token or an unterminated string.
 */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    if (PUNCTUATION.has(c)) {
      tokens.push({ kind: c as TokenKind, position: i, text: c });
      i++;
      continue;
    }
    if (c === '"' || c === "'") {
      const token = readString(text, i);
      tokens.push(token);
      i += token.text.length;
      continue;
    }
    IDENTIFIER.lastIndex = i;
    const word = IDENTIFIER.exec(text);
    if (word) {
      const kind: TokenKind = KEYWORDS.has(word[0]) ? (word[0] as TokenKind) : "identifier";
      tokens.push({ kind, position: i, text: word[0] });
      i += word[0].length;
      continue;
    }
    NUMBER.lastIndex = i;
    const number = NUMBER.exec(text);
    if (number) {
      const token = readNumberOrDuration(text, i, number[0]);
      tokens.push(token);
      i += token.text.length;
      continue;
    }
    throw new FilterError(
      i,
      "a function, field, value or punctuation",
      `unexpected character ${JSON.stringify(c)}; expected a function, field, value or punctuation`,
    );
  }
  tokens.push({ kind: "end", position: text.length, text: "" });
  return tokens;
}

function readNumberOrDuration(text: string, start: number, digits: string): Token {
  UNIT.lastIndex = start + digits.length;
  const unit = UNIT.exec(text);
  if (!unit) return { kind: "number", position: start, text: digits, value: Number(digits) };
  const factor = DURATION_UNITS[unit[0]];
  if (factor === undefined) {
    throw new FilterError(
      start + digits.length,
      "a duration unit",
      `unknown duration unit ${JSON.stringify(unit[0])}; expected one of ${Object.keys(DURATION_UNITS).join(", ")}`,
    );
  }
  return {
    kind: "duration",
    position: start,
    text: digits + unit[0],
    value: Number(digits) * factor,
  };
}

function readString(text: string, start: number): Token {
  const quote = text[start]!;
  let value = "";
  let i = start + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (c === quote) return { kind: "string", position: start, text: text.slice(start, i + 1), value };
    if (c !== "\\") {
      value += c;
      i++;
      continue;
    }
    const next = text[i + 1];
    if (next === undefined) break;
    if (next === "u") {
      const hex = text.slice(i + 2, i + 6);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
        throw new FilterError(
          i,
          "four hexadecimal digits after \\u",
          "expected four hexadecimal digits after \\u",
        );
      }
      value += String.fromCharCode(Number.parseInt(hex, 16));
      i += 6;
      continue;
    }
    value += ESCAPES[next] ?? next;
    i += 2;
  }
  throw new FilterError(start, `a closing ${quote}`, `unterminated string; expected a closing ${quote}`);
}
