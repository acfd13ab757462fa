/**
 * Presigned feedback tokens (`feedback_tokens`, migration 0028): made by the feedback token API and
 * by runs with `feedback_keys`, redeemed without an API key by whoever holds one.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { Queryable } from "../db.js";

/** A token as stored. */
export interface FeedbackTokenRecord {
  id: string;
  workspaceId: string;
  runId: string;
  feedbackKey: string;
  /** `{type, min, max, categories}` as the creator gave it; null for none. */
  feedbackConfig: JsonObject | null;
  expiresAt: Date;
}

/** A token to store. */
export type NewFeedbackToken = Omit<FeedbackTokenRecord, "workspaceId">;

/**
 * Expired tokens removed per insert: issuing tokens also clears a few that expired over a day ago,
 * so the table stays the size of the live ones without a sweeper job, and no insert waits long.
 */
const EXPIRED_DELETED_PER_INSERT = 100;

interface TokenRow {
  id: string;
  workspace_id: string;
  run_id: string;
  feedback_key: string;
  feedback_config: JsonObject | null;
  expires_at: Date;
}

function fromRow(row: TokenRow): FeedbackTokenRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    runId: row.run_id,
    feedbackKey: row.feedback_key,
    feedbackConfig: row.feedback_config,
    expiresAt: row.expires_at,
  };
}

/**
 * Stores `tokens` of one workspace, and deletes a bounded number of long-expired ones. The config
 * goes as JSON text cast in SQL, so that no JSON value type (encryption at rest) rewrites it.
 */
export async function insertFeedbackTokens(
  q: Queryable,
  workspaceId: string,
  tokens: readonly NewFeedbackToken[],
): Promise<void> {
  if (tokens.length === 0) return;
  await q`
    delete from feedback_tokens where id in (
      select id from feedback_tokens where expires_at < now() - interval '1 day'
      limit ${EXPIRED_DELETED_PER_INSERT}
    )`;
  for (const t of tokens) {
    const config = t.feedbackConfig === null ? null : JSON.stringify(t.feedbackConfig);
    await q`
      insert into feedback_tokens (id, workspace_id, run_id, feedback_key, feedback_config, expires_at)
      values (${t.id}, ${workspaceId}, ${t.runId}, ${t.feedbackKey}, ${config}::text::jsonb, ${t.expiresAt})`;
  }
}

/** The workspace's unexpired tokens of `runId`, oldest first, one page. */
export async function listFeedbackTokens(
  q: Queryable,
  workspaceId: string,
  runId: string,
  page: { offset: number; limit: number },
): Promise<FeedbackTokenRecord[]> {
  const rows = await q<TokenRow[]>`
    select id, workspace_id, run_id, feedback_key, feedback_config, expires_at
    from feedback_tokens
    where workspace_id = ${workspaceId} and run_id = ${runId} and expires_at > now()
    order by created_at, id
    offset ${page.offset} limit ${page.limit}`;
  return rows.map(fromRow);
}

/** The token `id` if it exists and has not expired, in whichever workspace it was made. */
export async function findLiveFeedbackToken(
  q: Queryable,
  id: string,
): Promise<FeedbackTokenRecord | undefined> {
  const [row] = await q<TokenRow[]>`
    select id, workspace_id, run_id, feedback_key, feedback_config, expires_at
    from feedback_tokens where id = ${id} and expires_at > now()`;
  return row ? fromRow(row) : undefined;
}
