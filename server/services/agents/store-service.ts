import { fromJson, type MessageInitShape } from "@bufbuild/protobuf";
import { ListValueSchema, timestampFromDate, type Value } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { Item } from "@langchain/langgraph-checkpoint";
import type { ItemSchema, StoreService } from "../../../gen/agentplane/agents/v1/store_service_pb.js";
import { PostgresStore, type PostgresStoreOptions } from "../../runtime/postgres-store.js";
import {
  StoreInputError,
  validateInteger,
  validateNamespace,
  validateTtl,
} from "../../runtime/store-validation.js";
import {
  type StoreItemKey,
  storeAuthDocument,
  storeDocumentPasses,
  storeItemAccess,
} from "../../store/agents/store-item-store.js";
import { createStoreItemUpsert } from "../../store/batching/store-item-batches.js";
import type { Sql } from "../../store/db.js";
import type { AuthFilter } from "../../store/filters/auth-filter-sql.js";
import { authorizeEvent, authorizeWorkspace, type Principal } from "../iam/principal.js";
import { refuseEncryptedFilter } from "./encrypted-filter.js";

/** Dependencies of {@link createStoreService}. */
export interface StoreServiceDeps {
  sql: Sql;
  /** The graphs file's `store.ttl` (default TTL, refresh on read); default: no TTL, refresh on read. */
  ttl?: Pick<PostgresStoreOptions, "defaultTtlMinutes" | "refreshOnRead"> | undefined;
}

/** Largest page the API serves, as for every search endpoint of the LangGraph API. */
const MAX_LIMIT = 1000;
/** Default page sizes of the LangGraph API (and of BaseStore). */
const DEFAULT_SEARCH_LIMIT = 10;
const DEFAULT_NAMESPACE_LIMIT = 100;
/** Offsets travel as SQL integers. */
const MAX_OFFSET = 2 ** 31 - 1;

const NO_SEMANTIC_SEARCH = "semantic search is not configured on this server";

/**
 * StoreService: the Agent Server's key-value store over REST (`/store/...`) and Connect. Each call
 * works on a {@link PostgresStore} bound to the caller's workspace, the same store graphs get, so
 * the API and graphs see the same items with the same validation and TTL rules.
 */
export function createStoreService({ sql, ttl = {} }: StoreServiceDeps): ServiceImpl<typeof StoreService> {
  // A bad default TTL is a configuration error: fail at start-up, not as a 422 on every put.
  if (ttl.defaultTtlMinutes !== undefined) validateTtl(ttl.defaultTtlMinutes, "store.ttl.default_ttl");
  const upsert = createStoreItemUpsert(sql);
  const storeOf = (workspaceId: string) => new PostgresStore(sql, workspaceId, { ...ttl, upsert });
  return {
    async putItem(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "store:write");
      const { key, value } = request;
      const { namespace, auth } = await scopedNamespace(principal, "store:put", request.namespace, {
        key,
        value,
      });
      await asInvalidArgument(async () => {
        requireNoIndex(request.index);
        if (value === undefined) throw new StoreInputError("value is required: send a JSON object");
        if (auth) {
          await requireUnhidden(sql, workspace.id, { namespace, key }, auth);
          if (!(await storeDocumentPasses(sql, storeAuthDocument({ namespace, key, value }), auth)))
            throw notAuthorized("store:put");
        }
        await storeOf(workspace.id).batch([{ namespace, key, value, ttl: request.ttl }]);
      });
      return {};
    },

    async getItem(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "store:read");
      const { namespace, auth } = await scopedNamespace(
        principal,
        "store:get",
        itemNamespace(request.namespace),
        {
          key: request.key,
        },
      );
      const [item] = await asInvalidArgument(async () => {
        if (auth) await requireUnhidden(sql, workspace.id, { namespace, key: request.key }, auth);
        return storeOf(workspace.id).batch([{ namespace, key: request.key, refreshTtl: request.refreshTtl }]);
      });
      return item ? { item: itemMessage(item) } : {};
    },

    async deleteItem(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "store:write");
      const { namespace, auth } = await scopedNamespace(principal, "store:delete", request.namespace, {
        key: request.key,
      });
      await asInvalidArgument(async () => {
        if (auth) {
          const key = { namespace, key: request.key };
          const access = await requireUnhidden(sql, workspace.id, key, auth);
          if (access === "missing" && !(await storeDocumentPasses(sql, storeAuthDocument(key), auth)))
            throw notAuthorized("store:delete");
        }
        await storeOf(workspace.id).batch([{ namespace, key: request.key, value: null }]);
      });
      return {};
    },

    async searchItems(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "store:read");
      const { namespace: prefix, auth } = await scopedNamespace(
        principal,
        "store:search",
        request.namespacePrefix,
        {
          filter: request.filter ?? null,
          limit: request.limit ?? null,
          offset: request.offset,
          query: request.query ?? null,
        },
      );
      const [items] = await asInvalidArgument(() => {
        if (request.query !== undefined && request.query !== "")
          throw new StoreInputError(`${NO_SEMANTIC_SEARCH}: send no query, and use filter to match values`);
        refuseEncryptedFilter(sql, "filter", request.filter);
        const namespacePrefix = validateNamespace(prefix, "namespace_prefix", "pattern");
        const limit = validateInteger(request.limit ?? DEFAULT_SEARCH_LIMIT, "limit", 1, MAX_LIMIT);
        const offset = validateInteger(request.offset, "offset", 0, MAX_OFFSET);
        return storeOf(workspace.id).batch([
          { namespacePrefix, filter: request.filter, limit, offset, refreshTtl: request.refreshTtl, auth },
        ]);
      });
      return { items: (items ?? []).map(itemMessage) };
    },

    async listNamespaces(request, ctx) {
      const { principal, workspace } = await authorizeWorkspace(ctx, "store:read");
      const { namespace: scoped, auth } = await scopedNamespace(
        principal,
        "store:list_namespaces",
        request.prefix,
        {
          suffix: request.suffix,
          max_depth: request.maxDepth ?? null,
          limit: request.limit ?? null,
          offset: request.offset,
        },
      );
      const [namespaces] = await asInvalidArgument(() => {
        const prefix = validateNamespace(scoped, "prefix", "pattern");
        const suffix = validateNamespace(request.suffix, "suffix", "pattern");
        const maxDepth =
          request.maxDepth === undefined
            ? undefined
            : validateInteger(request.maxDepth, "max_depth", 1, MAX_OFFSET);
        const limit = validateInteger(request.limit ?? DEFAULT_NAMESPACE_LIMIT, "limit", 1, MAX_LIMIT);
        const offset = validateInteger(request.offset, "offset", 0, MAX_OFFSET);
        const matchConditions = [
          ...(prefix.length > 0 ? [{ matchType: "prefix" as const, path: prefix }] : []),
          ...(suffix.length > 0 ? [{ matchType: "suffix" as const, path: suffix }] : []),
        ];
        return storeOf(workspace.id).batch([{ matchConditions, maxDepth, limit, offset, auth }]);
      });
      return { namespaces: (namespaces ?? []).map((ns) => fromJson(ListValueSchema, ns)) };
    },
  };
}

/**
 * GetItem's namespace as labels: one value is the labels joined by "." as the LangGraph SDKs send
 * it on REST (`?namespace=users.u1`; labels never contain "."), several are the labels themselves.
 */
function itemNamespace(namespace: readonly string[]): string[] {
  return namespace.length === 1 ? namespace[0]!.split(".") : [...namespace];
}

/**
 * The namespace a store call works in after custom auth's handler for `event` had `value` (with
 * `namespace`) to change, and the filter it returned. Store handlers scope users by rewriting the
 * namespace (say, to start with the user's identity) or by a filter, matched as on the LangGraph
 * JS server against each item's value with its `namespace` and `key` (see `storeAuthDocument`): a
 * search or listing then has only what passes; an item that fails reads as not found (404); a put
 * or a delete of a missing item that the filter would not pass is refused (403). A handler that
 * leaves no list of strings in `value.namespace` is refused, naming the event.
 */
async function scopedNamespace(
  principal: Principal,
  event: string,
  namespace: readonly string[],
  rest: Record<string, unknown>,
): Promise<{ namespace: string[]; auth?: AuthFilter }> {
  if (!principal.authRules) return { namespace: [...namespace] };
  const value: Record<string, unknown> = { namespace: [...namespace], ...rest };
  const auth = await authorizeEvent(principal, event, value);
  const scoped = value.namespace;
  if (!Array.isArray(scoped) || !scoped.every((label) => typeof label === "string"))
    throw new ConnectError(
      `the auth handler for ${event} set value.namespace to something that is not a list of strings`,
      Code.PermissionDenied,
    );
  return { namespace: scoped, ...(auth ? { auth } : {}) };
}

/**
 * Whether the item exists (and the caller may see it, custom auth's filter passing it); an item the
 * filter hides is not found (404), as on the LangGraph JS server.
 */
async function requireUnhidden(
  sql: Sql,
  workspaceId: string,
  key: StoreItemKey,
  auth: AuthFilter,
): Promise<"missing" | "visible"> {
  validateNamespace(key.namespace, "namespace", "item");
  const access = await storeItemAccess(sql, workspaceId, key, auth);
  if (access === "hidden") throw new ConnectError("item not found", Code.NotFound);
  return access;
}

/** PERMISSION_DENIED for a write custom auth's filter would not let its caller see. */
function notAuthorized(event: string): ConnectError {
  return new ConnectError(
    `not authorized: the auth handler for ${event} returned a filter the item would not pass`,
    Code.PermissionDenied,
  );
}

/** Runs `work`, turning the store's input errors into INVALID_ARGUMENT with the same message. */
async function asInvalidArgument<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof StoreInputError) throw new ConnectError(error.message, Code.InvalidArgument);
    throw error;
  }
}

/** `index` may be absent, null or false: anything else asks for semantic indexing. */
function requireNoIndex(index: Value | undefined): void {
  const kind = index?.kind;
  if (kind === undefined || kind.case === undefined || kind.case === "nullValue") return;
  if (kind.case === "boolValue" && !kind.value) return;
  throw new StoreInputError(`${NO_SEMANTIC_SEARCH}: index must be false or null`);
}

function itemMessage(item: Item): MessageInitShape<typeof ItemSchema> {
  return {
    namespace: item.namespace,
    key: item.key,
    value: item.value,
    createdAt: timestampFromDate(item.createdAt),
    updatedAt: timestampFromDate(item.updatedAt),
  };
}
