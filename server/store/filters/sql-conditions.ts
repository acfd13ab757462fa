import type postgres from "postgres";
import type { Queryable } from "../db.js";

/** A piece of SQL with its parameters, to nest in a porsager query. */
export type SqlCondition = postgres.Fragment;

/**
 * The conjunction of `conditions`, each one in its own parentheses, so that no condition can bind
 * looser than the `and` around it (an `a or b` among them stays `(a or b)`); `true` when empty.
 */
export function allOf(q: Queryable, conditions: readonly SqlCondition[]): SqlCondition {
  if (conditions.length === 0) return q`true`;
  return conditions.map((c) => q`(${c})`).reduce((acc, c) => q`${acc} and ${c}`);
}

/**
 * The one way a query over workspace rows combines the workspace with what the caller asked for:
 * `alias.workspace_id = $ws and ((c1) and (c2) ...)`. Whatever the conditions contain, a row of
 * another workspace cannot pass.
 */
export function inWorkspace(
  q: Queryable,
  alias: string,
  workspaceId: string,
  conditions: readonly SqlCondition[],
): SqlCondition {
  return q`${q(alias)}.workspace_id = ${workspaceId} and (${allOf(q, conditions)})`;
}
