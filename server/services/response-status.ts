import { createContextKey, type HandlerContext } from "@connectrpc/connect";

/**
 * The HTTP status a unary RPC's REST form answers with when it succeeds; 200 unless the handler
 * sets another 2xx (the LangGraph API answers a cancel without `wait` with 202 Accepted). gRPC and
 * Connect have no such status and ignore it.
 */
export const restSuccessStatusKey = createContextKey<number>(200);

/** Makes the REST form of this call answer `status` (a 2xx) on success. */
export function setRestSuccessStatus(ctx: HandlerContext, status: 200 | 201 | 202): void {
  ctx.values.set(restSuccessStatusKey, status);
}

/**
 * The top-level fields a REST answer keeps (an object, or each object of an answered list), for
 * `select`: proto3 JSON writes every field, empty lists included, and a selection leaves the
 * unselected ones out. gRPC and Connect clients get the message with those fields unset.
 */
export const restFieldSelectionKey = createContextKey<ReadonlySet<string> | undefined>(undefined);

/** Makes the REST form of this call answer only `fields` of its answer. */
export function selectRestFields(ctx: HandlerContext, fields: ReadonlySet<string>): void {
  ctx.values.set(restFieldSelectionKey, fields);
}
