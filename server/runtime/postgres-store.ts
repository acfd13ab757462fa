import {
  BaseStore,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
} from "@langchain/langgraph-checkpoint";
import {
  deleteStoreItems,
  getStoreItems,
  listStoreNamespaces,
  type StoreFilterCondition,
  type StoreItemRecord,
  searchStoreItems,
  upsertStoreItems,
  type WorkspaceStoreItemWrite,
} from "../store/agents/store-item-store.js";
import type { StoreItemUpsert } from "../store/batching/store-item-batches.js";
import type { Queryable, Sql } from "../store/db.js";
import type { AuthFilter } from "../store/filters/auth-filter-sql.js";
import {
  parseStoreFilter,
  StoreInputError,
  validateInteger,
  validateKey,
  validateNamespace,
  validateTtl,
} from "./store-validation.js";

/** Options of a {@link PostgresStore}: TTL behaviour (the graphs file's `store.ttl`) and batching. */
export interface PostgresStoreOptions {
  /**
   * Runs a batch's lone put together with other requests' (one per process); without it, every
   * put is its own statement.
   */
  readonly upsert?: StoreItemUpsert | undefined;
  /** Minutes until an item expires when its put names no TTL; absent: such items never expire. */
  readonly defaultTtlMinutes?: number | undefined;
  /** Restart an item's TTL when a get or search returns it, unless the operation says; default true. */
  readonly refreshOnRead?: boolean | undefined;
}

/** A put that may also set the item's TTL: minutes, `null` for none, absent for the store's default. */
export interface StorePutOperation extends PutOperation {
  ttl?: number | null | undefined;
}

/** A get that may override the store's `refreshOnRead`. */
export interface StoreGetOperation extends GetOperation {
  refreshTtl?: boolean | undefined;
}

/**
 * A search that may override the store's `refreshOnRead` for the items it returns, and return only
 * the items custom auth's filter passes (the API's store routes; graphs search without one).
 */
export interface StoreSearchOperation extends SearchOperation {
  refreshTtl?: boolean | undefined;
  auth?: AuthFilter | undefined;
}

/** A namespace listing that lists only the namespaces custom auth's filter passes. */
export interface StoreListNamespacesOperation extends ListNamespacesOperation {
  auth?: AuthFilter | undefined;
}

/**
 * Largest page of a search or namespace listing: a graph asking for more than this many items at
 * once is almost certainly unbounded by mistake, and the rows are held in memory.
 */
const MAX_PAGE = 10_000;
/** Offsets and depths travel as SQL integers. */
const MAX_INT32 = 2 ** 31 - 1;
/** BaseStore's documented defaults for search and namespace listing pages. */
const DEFAULT_SEARCH_LIMIT = 10;
const DEFAULT_NAMESPACE_LIMIT = 100;

type Classified =
  | { kind: "get"; op: StoreGetOperation }
  | { kind: "search"; op: StoreSearchOperation; filter: StoreFilterCondition[] }
  | { kind: "put"; op: StorePutOperation }
  | { kind: "list"; op: StoreListNamespacesOperation };

/**
 * LangGraph's `BaseStore` on Postgres, bound to one workspace: every query filters on it, so a graph
 * run in workspace A never sees workspace B's items. A class because BaseStore is one; it holds no
 * state beyond its binding, so one per run (or per request) is cheap.
 *
 * `batch()` follows the reference stores (InMemoryStore, the Python PostgresStore): reads see the
 * state before the batch's writes, writes are applied last, and several puts to one item keep the
 * last. A batch of more than one operation runs in one transaction. Expired items are invisible;
 * reads restart the TTL of what they return per `refreshOnRead`. Search returns the most recently
 * updated items first. Semantic search is not configured: a search's `query` and a put's `index`
 * are ignored, as InMemoryStore does without an index. Bad input throws {@link StoreInputError}.
 */
export class PostgresStore extends BaseStore {
  readonly #sql: Sql;
  readonly #workspaceId: string;
  readonly #defaultTtl: number | null;
  readonly #refreshOnRead: boolean;
  readonly #upsert: StoreItemUpsert | undefined;

  /** Binds the store to `workspaceId`; validates the options. */
  constructor(sql: Sql, workspaceId: string, options: PostgresStoreOptions = {}) {
    super();
    this.#sql = sql;
    this.#workspaceId = workspaceId;
    this.#defaultTtl =
      options.defaultTtlMinutes === undefined ? null : validateTtl(options.defaultTtlMinutes, "default TTL");
    this.#refreshOnRead = options.refreshOnRead ?? true;
    this.#upsert = options.upsert;
  }

  /** Runs get, search, put and list-namespaces operations; see the class comment for the semantics. */
  override async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const classified = operations.map((op) => this.#validate(op as Operation));
    const run = (q: Queryable) => this.#run(q, classified);
    const results = classified.length > 1 ? await this.#sql.begin(run) : await run(this.#sql);
    return results as OperationResults<Op>;
  }

  async #run(q: Queryable, ops: readonly Classified[]): Promise<unknown[]> {
    const results: unknown[] = ops.map(() => undefined);
    const getAt: number[] = [];
    const gets = ops.flatMap((c, i) => {
      if (c.kind !== "get") return [];
      getAt.push(i);
      return [
        { namespace: c.op.namespace, key: c.op.key, refreshTtl: c.op.refreshTtl ?? this.#refreshOnRead },
      ];
    });
    const found = await getStoreItems(q, this.#workspaceId, gets);
    found.forEach((record, j) => {
      results[getAt[j]!] = record && toItem(record);
    });
    for (const [i, c] of ops.entries()) {
      if (c.kind === "search") {
        const records = await searchStoreItems(q, this.#workspaceId, {
          namespacePrefix: c.op.namespacePrefix,
          filter: c.filter,
          limit: c.op.limit ?? DEFAULT_SEARCH_LIMIT,
          offset: c.op.offset ?? 0,
          refreshTtl: c.op.refreshTtl ?? this.#refreshOnRead,
          auth: c.op.auth,
        });
        results[i] = records.map((r): SearchItem => toItem(r));
      } else if (c.kind === "list") {
        const pathOf = (type: string) => c.op.matchConditions?.find((m) => m.matchType === type)?.path;
        results[i] = await listStoreNamespaces(q, this.#workspaceId, {
          prefix: pathOf("prefix"),
          suffix: pathOf("suffix"),
          maxDepth: c.op.maxDepth,
          limit: c.op.limit ?? DEFAULT_NAMESPACE_LIMIT,
          offset: c.op.offset ?? 0,
          auth: c.op.auth,
        });
      }
    }
    await this.#write(q, ops);
    return results;
  }

  /** Applies the puts, last one per item winning: deletes for null values, upserts otherwise. */
  async #write(q: Queryable, ops: readonly Classified[]): Promise<void> {
    const last = new Map<string, StorePutOperation>();
    for (const c of ops) if (c.kind === "put") last.set(JSON.stringify([c.op.namespace, c.op.key]), c.op);
    if (last.size === 0) return;
    const puts = [...last.values()];
    await deleteStoreItems(
      q,
      this.#workspaceId,
      puts.filter((p) => p.value === null),
    );
    const upserts = puts.flatMap((p): WorkspaceStoreItemWrite[] =>
      p.value === null
        ? []
        : [
            {
              workspaceId: this.#workspaceId,
              namespace: p.namespace,
              key: p.key,
              value: p.value,
              ttlMinutes: this.#ttlOf(p),
            },
          ],
    );
    const [only] = upserts;
    // Only a lone put on the pool joins other requests' statement; a transaction keeps its own.
    if (upserts.length === 1 && only && q === this.#sql && this.#upsert) await this.#upsert(only);
    else await upsertStoreItems(q, upserts);
  }

  #ttlOf(op: StorePutOperation): number | null {
    if (op.ttl === undefined) return this.#defaultTtl;
    return op.ttl === null ? null : op.ttl;
  }

  /** Classifies an operation (as InMemoryStore does, by its fields) and checks its input. */
  #validate(op: Operation): Classified {
    if ("namespacePrefix" in op) {
      validateNamespace(op.namespacePrefix, "namespace prefix", "pattern");
      if (op.limit !== undefined) validateInteger(op.limit, "limit", 0, MAX_PAGE);
      if (op.offset !== undefined) validateInteger(op.offset, "offset", 0, MAX_INT32);
      return { kind: "search", op, filter: parseStoreFilter(op.filter) };
    }
    if ("namespace" in op && "key" in op) {
      validateNamespace(op.namespace, "namespace", "item");
      validateKey(op.key);
      if (!("value" in op)) return { kind: "get", op };
      const put = op as StorePutOperation;
      if (put.value !== null && (typeof put.value !== "object" || Array.isArray(put.value)))
        throw new StoreInputError("value must be a JSON object, or null to delete the item");
      if (put.ttl !== undefined && put.ttl !== null) validateTtl(put.ttl, "ttl");
      return { kind: "put", op: put };
    }
    const list = op as StoreListNamespacesOperation;
    const seen = new Set<string>();
    for (const m of list.matchConditions ?? []) {
      if (m.matchType !== "prefix" && m.matchType !== "suffix")
        throw new StoreInputError(`match type must be "prefix" or "suffix"; got ${String(m.matchType)}`);
      if (seen.has(m.matchType))
        throw new StoreInputError(`give at most one ${m.matchType} condition when listing namespaces`);
      seen.add(m.matchType);
      validateNamespace(m.path, m.matchType, "pattern");
    }
    if (list.maxDepth !== undefined) validateInteger(list.maxDepth, "max depth", 1, MAX_INT32);
    validateInteger(list.limit ?? DEFAULT_NAMESPACE_LIMIT, "limit", 0, MAX_PAGE);
    validateInteger(list.offset ?? 0, "offset", 0, MAX_INT32);
    return { kind: "list", op: list };
  }
}

function toItem(record: StoreItemRecord): Item {
  return {
    namespace: record.namespace,
    key: record.key,
    value: record.value,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}
