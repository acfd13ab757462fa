import type { ComparisonOperator, FieldReference, FilterExpression, FilterLiteral } from "./filter-ast.js";
import { FilterError } from "./filter-error.js";
import { type Token, type TokenKind, tokenize } from "./filter-lexer.js";

/** Every function of the language, in the order error messages list them. */
export const FILTER_FUNCTIONS = [
  "and",
  "or",
  "not",
  "eq",
  "neq",
  "gt",
  "gte",
  "lt",
  "lte",
  "has",
  "in",
  "search",
] as const;
const FUNCTION_LIST = FILTER_FUNCTIONS.join(", ");
const LITERAL_KINDS = new Set<TokenKind>(["string", "number", "duration", "true", "false", "null"]);

/**
 * Parses filter text (`and(eq(run_type, "llm"), gt(latency, 5))`) into a {@link FilterExpression}.
 * Throws {@link FilterError} with the position and what was expected on any syntax error, an
 * unknown function or a wrong number of arguments. Blank text is an error: callers treat an absent
 * filter as "no filter" before parsing.
 */
export function parseFilter(text: string): FilterExpression {
  const tokens = tokenize(text);
  let index = 0;
  const peek = (): Token => tokens[index]!;
  const next = (): Token => tokens[index++]!;
  const expect = (kind: TokenKind, what: string = JSON.stringify(kind)): Token => {
    const token = next();
    if (token.kind !== kind) throw unexpected(token, what);
    return token;
  };

  const expression = (): FilterExpression => {
    const name = next();
    if (name.kind !== "identifier") throw unexpected(name, `a function such as ${FUNCTION_LIST}`);
    if (!(FILTER_FUNCTIONS as readonly string[]).includes(name.text)) {
      throw new FilterError(
        name.position,
        `one of ${FUNCTION_LIST}`,
        `unknown function "${name.text}"; expected one of ${FUNCTION_LIST}`,
      );
    }
    expect("(", '"("');
    const position = name.position;
    switch (name.text) {
      case "and":
      case "or": {
        const operands = [expression()];
        while (peek().kind === ",") {
          next();
          operands.push(expression());
        }
        expect(")", '"," or ")"');
        return { kind: name.text, operands, position };
      }
      case "not": {
        const operand = expression();
        expect(")", '")"');
        return { kind: "not", operand, position };
      }
      case "in": {
        const field = fieldReference();
        expect(",", '","');
        const open = expect("[", 'a list such as ["a", "b"]');
        const values: FilterLiteral[] = [];
        if (peek().kind !== "]") {
          values.push(literal());
          while (peek().kind === ",") {
            next();
            values.push(literal());
          }
        }
        expect("]", '"," or "]"');
        expect(")", '")"');
        return { kind: "in", field, values, listPosition: open.position, position };
      }
      case "search": {
        const first = peek();
        if (first.kind === "identifier") {
          const field = fieldReference();
          expect(",", '","');
          const value = literal();
          expect(")", '")"');
          return { kind: "search", field, value, position };
        }
        const value = literal();
        expect(")", '")"');
        return { kind: "search", field: undefined, value, position };
      }
      default: {
        const field = fieldReference();
        expect(",", '","');
        const value = literal();
        expect(")", '")"');
        if (name.text === "has") return { kind: "has", field, value, position };
        return {
          kind: "comparison",
          operator: name.text as ComparisonOperator,
          field,
          value,
          position,
        };
      }
    }
  };

  const fieldReference = (): FieldReference => {
    const token = next();
    if (token.kind !== "identifier") throw unexpected(token, "a field name");
    return { name: token.text, position: token.position };
  };

  const literal = (): FilterLiteral => {
    const token = next();
    if (!LITERAL_KINDS.has(token.kind)) {
      throw unexpected(token, "a value (a quoted string, a number, true, false or null)");
    }
    const position = token.position;
    switch (token.kind) {
      case "string":
        return { kind: "string", value: token.value as string, position };
      case "number":
        return { kind: "number", value: token.value as number, position };
      case "duration":
        return { kind: "duration", value: token.value as number, position };
      case "true":
      case "false":
        return { kind: "boolean", value: token.kind === "true", position };
      default:
        return { kind: "null", value: null, position };
    }
  };

  const root = expression();
  expect("end", "the end of the filter");
  return root;
}

function unexpected(token: Token, expected: string): FilterError {
  const found = token.kind === "end" ? "the end of the filter" : JSON.stringify(token.text);
  return new FilterError(token.position, expected, `expected ${expected}, found ${found}`);
}
