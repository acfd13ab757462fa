import type { Sql } from "../db.js";

/** The channel migration 0008 notifies on every change to what authentication reads. */
const IDENTITY_CHANGES_CHANNEL = "agentplane_identity_changed";

/**
 * Calls `onChange` whenever a committed transaction changed an API key, an organization, a user, a
 * membership or a workspace (in any process, or by hand in SQL), and each time the listening
 * connection is (re)established, since changes made while it was down were never announced.
 * Resolves once listening; the returned function stops it.
 */
export async function listenForIdentityChanges(sql: Sql, onChange: () => void): Promise<() => Promise<void>> {
  const listener = await sql.listen(IDENTITY_CHANGES_CHANNEL, onChange, onChange);
  return async () => {
    await listener.unlisten();
  };
}
