import { Code, ConnectError } from "@connectrpc/connect";
import { type Queryable, storedCipherOf } from "../../store/db.js";

/**
 * Refuses (422) a search or count filter that names a key whose values are encrypted at rest: each
 * stored value is sealed with a random IV, so Postgres cannot match it and the search would
 * silently find nothing. `field` names the request field, e.g. `metadata`.
 */
export function refuseEncryptedFilter(sql: Queryable, field: string, filter: unknown): void {
  if (filter === undefined || filter === null) return;
  const key = storedCipherOf(sql)?.encryptedKeyIn(filter);
  if (key === undefined) return;
  throw new ConnectError(
    `${field} filters on the key "${key}", whose values are encrypted at rest (AGENTPLANE_AES_JSON_KEYS): encrypted keys cannot be filtered on; remove "${key}" from ${field}`,
    Code.InvalidArgument,
  );
}
