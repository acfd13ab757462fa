import { upsertStoreItems, type WorkspaceStoreItemWrite } from "../agents/store-item-store.js";
import type { Sql } from "../db.js";
import { type Coalescer, createCoalescer } from "./coalescer.js";

/**
 * Stores one item on the pool (never inside a transaction), in one statement with the other
 * single-item puts of the same turn of the event loop (see {@link createCoalescer}). Of concurrent
 * puts to one item, the last submitted wins, as if they had run in that order.
 */
export type StoreItemUpsert = Coalescer<WorkspaceStoreItemWrite, void>;

/** One {@link StoreItemUpsert} per process, shared by every request. */
export function createStoreItemUpsert(sql: Sql): StoreItemUpsert {
  return createCoalescer({
    run: async (items) => {
      await upsertStoreItems(sql, items);
      return items.map(() => undefined);
    },
  });
}
