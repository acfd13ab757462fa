import type { JsonObject, JsonValue } from "../json-value.js";
import type { AuthFilter } from "./auth-filter-sql.js";

/**
 * A custom auth filter as data rather than SQL text: a row passes when, for at least one
 * alternative, its metadata contains (`@>`) every object of that alternative. The objects are the
 * very containments {@link authFilterSql} writes, rearranged as an OR of ANDs (disjunctive normal
 * form), so both forms select the same rows. As data, filters of different users can ride in one
 * batched statement, each row checked against its own filter in SQL.
 */
export type FilterAlternatives = readonly (readonly JsonObject[])[];

/**
 * Containments a filter may expand into at most: an `$and` of `$or`s multiplies out, and beyond
 * this the lookup goes as a statement of its own with the filter as SQL text instead. Ownership
 * rules (`owner = me`, or `owner = me or shared`) expand to one or two; 64 leaves room for a
 * handful of combined rules while keeping the per-row check a few dozen containments.
 */
export const MAX_FILTER_CONTAINMENTS = 64;

/**
 * `filter` as {@link FilterAlternatives}; undefined when it expands past
 * {@link MAX_FILTER_CONTAINMENTS} containments.
 */
export function filterAlternatives(filter: AuthFilter): FilterAlternatives | undefined {
  const alternatives = expand(filter);
  return alternatives && size(alternatives) <= MAX_FILTER_CONTAINMENTS ? alternatives : undefined;
}

function size(alternatives: FilterAlternatives): number {
  return alternatives.reduce((sum, all) => sum + all.length, 0);
}

function expand(filter: AuthFilter): FilterAlternatives | undefined {
  switch (filter.kind) {
    case "eq":
      return [[{ [filter.key]: filter.value }]];
    case "contains":
      return [[{ [filter.key]: filter.values as JsonValue[] }]];
    case "or": {
      const alternatives: (readonly JsonObject[])[] = [];
      for (const branch of filter.filters) {
        const expanded = expand(branch);
        if (!expanded) return undefined;
        alternatives.push(...expanded);
        if (size(alternatives) > MAX_FILTER_CONTAINMENTS) return undefined;
      }
      return alternatives;
    }
    case "and": {
      // (a or b) and (c or d) = (a and c) or (a and d) or (b and c) or (b and d).
      let product: FilterAlternatives = [[]];
      for (const branch of filter.filters) {
        const expanded = expand(branch);
        if (!expanded) return undefined;
        product = product.flatMap((left) => expanded.map((right) => [...left, ...right]));
        if (size(product) > MAX_FILTER_CONTAINMENTS) return undefined;
      }
      return product;
    }
  }
}

/**
 * `metadata` (a search's own containment filter) and `auth` folded into one containment object
 * when `auth` is a plain conjunction (one alternative) naming keys that neither it nor `metadata`
 * names twice, with nothing left over; otherwise `metadata` as it is and `auth` as the rest.
 * `m @> {a: x} and m @> {b: y}` is `m @> {a: x, b: y}` for distinct keys, so both forms select
 * the same rows; but a prepared statement's generic plan guesses each containment keeps a small
 * share of the rows, so two of them look selective enough to read through the GIN index and sort
 * every match for one page (3× slower than one containment, measured on 10,000 matching threads).
 */
export function foldedContainment(
  metadata: JsonObject | undefined,
  auth: AuthFilter | undefined,
): { containment: JsonObject | undefined; rest: AuthFilter | undefined } {
  const unfolded = { containment: metadata, rest: auth };
  if (!auth) return unfolded;
  const alternatives = filterAlternatives(auth);
  const [only] = alternatives ?? [];
  if (alternatives?.length !== 1 || !only) return unfolded;
  // A Map, not assignment: a key such as `__proto__` stays a key.
  const folded = new Map(Object.entries(metadata ?? {}));
  for (const part of only) {
    for (const [key, value] of Object.entries(part)) {
      if (folded.has(key)) return unfolded;
      folded.set(key, value);
    }
  }
  return { containment: Object.fromEntries(folded), rest: undefined };
}
