/**
 * Random run filters (`and(eq(run_type, "llm"), gt(latency, "5s"))`) drawn from the grammar of the
 * filter language: every function of FILTER_FUNCTIONS, every field of FILTER_FIELDS (a field added
 * there is generated from its type with no change here), nested `and`/`or`/`not`, key/value pairs
 * grouped in one `and`, every literal form (both quotes, escapes, durations, time formats, null).
 * Values come from a {@link FilterVocabulary} of stored data, so filters match rows; a few are
 * invented, so some match nothing. Generated filters are valid unless `invalid` is asked for.
 */
import { FILTER_FIELDS, FILTER_FUNCTIONS, SEARCH_FIELDS } from "../../server/tracing/filter/index.js";
import type { Random } from "./seeded-random.js";

/** A JSON scalar stored in a run: what filters compare with. */
export type Scalar = string | number | boolean;

/** The values filters draw from. */
export interface FilterVocabulary {
  /** Values of each column field, by field name (timestamps as ISO text, latency in seconds). */
  columns: Record<string, Scalar[]>;
  /** Tags of runs. */
  tags: string[];
  /** Key/value entries of each family: metadata, top-level inputs and outputs, feedback. */
  entries: Record<"metadata" | "input" | "output" | "feedback", { key: string; value: Scalar | null }[]>;
  /** Text that occurs in names, errors, inputs or outputs, for `search`. */
  texts: string[];
}

/** Which functions and fields the generated filters used: a run checks it covered the grammar. */
export interface FilterCoverage {
  functions: Set<string>;
  fields: Set<string>;
}

/** Empty coverage. */
export function filterCoverage(): FilterCoverage {
  return { functions: new Set(), fields: new Set() };
}

/** What coverage is complete against: every function and field of the language. */
export function missingCoverage(coverage: FilterCoverage): string[] {
  return [
    ...FILTER_FUNCTIONS.filter((f) => !coverage.functions.has(f)).map((f) => `function ${f}`),
    ...[...FILTER_FIELDS.keys()].filter((f) => !coverage.fields.has(f)).map((f) => `field ${f}`),
  ];
}

/** How deep `and`/`or`/`not` nest at most: deep enough for precedence bugs, short enough to read. */
const MAX_DEPTH = 3;
/** Operators that order values: only for times, numbers, latency and feedback scores. */
const ORDERING = ["gt", "gte", "lt", "lte"] as const;
const COLUMNS = [...FILTER_FIELDS.values()].filter((f) => f.kind === "column");
const ENTRY_FAMILIES = ["metadata", "input", "output", "feedback"] as const;

/** A random filter over `vocabulary`, recording what it used in `coverage`. */
export function randomRunFilter(
  random: Random,
  vocabulary: FilterVocabulary,
  coverage: FilterCoverage,
): string {
  const g = generator(random, vocabulary, coverage);
  return g.expression(0);
}

/**
 * A filter that the server must refuse with 422: a valid filter with one mistake (an unknown field
 * or function, a value of the wrong type, a missing parenthesis).
 */
export function invalidRunFilter(random: Random, vocabulary: FilterVocabulary): string {
  const valid = randomRunFilter(random, vocabulary, filterCoverage());
  switch (random.int(0, 4)) {
    case 0:
      return `and(${valid}, eq(no_such_field, "x"))`;
    case 1:
      return `or(${valid}, like(name, "x"))`;
    case 2:
      return `and(${valid}, gt(name, "a"))`;
    case 3:
      return `and(${valid}, eq(total_tokens, "many"))`;
    default:
      return valid.slice(0, -1);
  }
}

function generator(random: Random, vocabulary: FilterVocabulary, coverage: FilterCoverage) {
  const use = (fn: string, field?: string) => {
    coverage.functions.add(fn);
    if (field) coverage.fields.add(field);
  };

  const quoted = (text: string): string => {
    const quote = random.chance(0.7) ? '"' : "'";
    let body = "";
    for (const c of text) {
      if (c === "\\" || c === quote) body += `\\${c}`;
      else if (c === "\n") body += "\\n";
      else if (c !== " " && random.chance(0.02))
        body += `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
      else body += c;
    }
    return `${quote}${body}${quote}`;
  };

  const timestampLiteral = (iso: string): string => {
    switch (random.int(0, 5)) {
      case 0:
        return quoted(iso.replace("T", " "));
      case 1:
        return quoted(`${iso.slice(0, 19)}+00:00`);
      case 2:
        return quoted(iso.slice(0, 10));
      case 3:
        return quoted(`${iso.slice(0, 23)}Z`);
      default:
        return quoted(iso);
    }
  };

  const latencyLiteral = (seconds: number): string => {
    switch (random.int(0, 3)) {
      case 0:
        return `${Math.round(seconds * 1000)}ms`;
      case 1:
        return quoted(`${seconds}s`);
      case 2:
        return quoted(`${(seconds / 60).toFixed(4)}m`);
      default:
        return String(seconds);
    }
  };

  /** A value of the column field: mostly stored ones, sometimes one nothing has. */
  const columnValue = (name: string, type: string, allowed?: readonly string[]): Scalar => {
    const stored = vocabulary.columns[name] ?? [];
    if (allowed) return random.pick(allowed);
    if (stored.length > 0 && random.chance(0.9)) return random.pick(stored);
    switch (type) {
      case "uuid":
        return random.uuid();
      case "timestamp":
        return "2026-02-03T04:05:10.500000Z";
      case "number":
        return random.int(0, 500);
      case "latency":
        return random.int(0, 9) / 2;
      case "boolean":
        return random.chance(0.5);
      default:
        return random.pick(["x", "nothing", "ChatModel ", ""]);
    }
  };

  const literalOf = (type: string, value: Scalar): string => {
    switch (type) {
      case "timestamp":
        return timestampLiteral(String(value));
      case "latency":
        return latencyLiteral(Number(value));
      case "number":
      case "boolean":
        return String(value);
      default:
        return quoted(String(value));
    }
  };

  const compare = (): string => {
    const field = random.pick(COLUMNS);
    const ordered = field.type === "timestamp" || field.type === "number" || field.type === "latency";
    const operator = random.pick([
      "eq",
      "neq",
      ...(ordered ? ORDERING : []),
      ...(ordered ? ORDERING : []),
    ] as const);
    use(operator, field.name);
    if (field.nullable && (operator === "eq" || operator === "neq") && random.chance(0.15))
      return `${operator}(${field.name}, null)`;
    return `${operator}(${field.name}, ${literalOf(field.type, columnValue(field.name, field.type, field.values))})`;
  };

  const inList = (): string => {
    const field = random.pick(COLUMNS.filter((f) => f.type !== "boolean"));
    use("in", field.name);
    const values = Array.from({ length: random.int(1, 3) }, () =>
      literalOf(field.type, columnValue(field.name, field.type, field.values)),
    );
    return `in(${field.name}, [${values.join(", ")}])`;
  };

  const has = (): string => {
    use("has");
    if (random.chance(0.6)) {
      coverage.fields.add("tags");
      return `has(tags, ${quoted(random.chance(0.9) ? random.pick(vocabulary.tags) : "untagged")})`;
    }
    coverage.fields.add("metadata");
    const entries = random.some(vocabulary.entries.metadata, 2);
    const object = Object.fromEntries(entries.map((e) => [e.key, e.value]));
    return `has(metadata, ${quoted(JSON.stringify(object))})`;
  };

  const search = (): string => {
    use("search");
    const stored = random.pick(vocabulary.texts);
    const start = random.int(0, Math.max(0, stored.length - 3));
    let text = stored.slice(start, start + random.int(2, 12)) || stored;
    if (random.chance(0.3)) text = text.toUpperCase();
    if (random.chance(0.05)) text = random.pick(["%", "_", "\\", "no such text"]);
    if (random.chance(0.5)) return `search(${quoted(text)})`;
    return `search(${random.pick(SEARCH_FIELDS)}, ${quoted(text)})`;
  };

  const entryNames = (family: (typeof ENTRY_FAMILIES)[number]) =>
    family === "feedback"
      ? { key: "feedback_key", value: "feedback_score" }
      : { key: `${family}_key`, value: `${family}_value` };

  /** A comparison on the key or the value of an entry. */
  const entryCondition = (family: (typeof ENTRY_FAMILIES)[number], part: "key" | "value"): string => {
    const names = entryNames(family);
    const stored = vocabulary.entries[family];
    const entry = stored.length > 0 && random.chance(0.9) ? random.pick(stored) : { key: "zzz", value: 7 };
    const field = part === "key" ? names.key : names.value;
    if (part === "key") {
      const operator = random.pick(["eq", "neq", "in"] as const);
      use(operator, field);
      if (operator === "in")
        return `in(${field}, [${quoted(entry.key)}, ${quoted(random.pick(stored).key)}])`;
      return `${operator}(${field}, ${quoted(entry.key)})`;
    }
    const value = entry.value ?? 0;
    const numeric = family === "feedback" || (typeof value === "number" && random.chance(0.5));
    const operator = random.pick(["eq", "neq", "in", ...(numeric ? ORDERING : [])] as const);
    use(operator, field);
    const literal = (v: Scalar | null) =>
      family === "feedback"
        ? String(typeof v === "number" ? v : 0.5)
        : typeof v === "string"
          ? quoted(v)
          : String(v ?? 0);
    if (operator === "in") return `in(${field}, [${literal(value)}, ${literal(random.pick(stored).value)}])`;
    return `${operator}(${field}, ${literal(typeof value === "number" || !numeric ? value : 1)})`;
  };

  /** `and(key condition, value condition)`: one entry must meet both. */
  const entryPair = (): string => {
    const family = random.pick(ENTRY_FAMILIES);
    use("and");
    return `and(${entryCondition(family, "key")}, ${entryCondition(family, "value")})`;
  };

  const leaf = (): string => {
    const roll = random.next();
    if (roll < 0.38) return compare();
    if (roll < 0.48) return inList();
    if (roll < 0.58) return has();
    if (roll < 0.7) return search();
    if (roll < 0.85) return entryCondition(random.pick(ENTRY_FAMILIES), random.chance(0.5) ? "key" : "value");
    return entryPair();
  };

  const expression = (depth: number): string => {
    if (depth >= MAX_DEPTH || random.chance(0.45)) return leaf();
    const roll = random.next();
    if (roll < 0.2) {
      use("not");
      return `not(${expression(depth + 1)})`;
    }
    const operator = roll < 0.6 ? "or" : "and";
    use(operator);
    const operands = Array.from({ length: random.int(1, 4) }, () => expression(depth + 1));
    return `${operator}(${operands.join(random.pick([", ", ",", " ,\n  "]))})`;
  };

  return { expression };
}
