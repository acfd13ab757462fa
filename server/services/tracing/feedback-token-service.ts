import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { FeedbackTokenService } from "../../../gen/agentplane/tracing/v1/feedback_token_service_pb.js";
import { uuidv7 } from "../../ids.js";
import type { Sql } from "../../store/db.js";
import { findLiveFeedbackToken } from "../../store/tracing/feedback-token-store.js";
import { normalizeFeedback } from "../../tracing/run-normalizer.js";
import { requireUuid } from "../request-validation.js";
import { jsonOf, storeFeedback } from "./feedback-service.js";
import { checkAgainstConfig } from "./feedback-tokens.js";

/** Dependencies of {@link createFeedbackTokenService}. */
export interface FeedbackTokenServiceDeps {
  sql: Sql;
}

/**
 * FeedbackTokenService: feedback given with a presigned token, which is the credential (bound
 * without the API-key guard). The feedback is stored as any is (feedback-service.ts), on the
 * token's run and key; a token may be used more than once until it expires, as LangSmith's are.
 */
export function createFeedbackTokenService({
  sql,
}: FeedbackTokenServiceDeps): ServiceImpl<typeof FeedbackTokenService> {
  return {
    async createFeedbackWithToken(request) {
      const tokenId = requireUuid(request.token, "token");
      const token = await findLiveFeedbackToken(sql, tokenId);
      if (!token)
        throw new ConnectError(`feedback token ${tokenId} does not exist or has expired`, Code.NotFound);
      const item = normalizeFeedback({
        id: uuidv7(),
        run_id: token.runId,
        key: token.feedbackKey,
        score: jsonOf(request.score),
        value: jsonOf(request.value),
        comment: request.comment,
        correction: jsonOf(request.correction),
        feedback_source: { type: "app", metadata: request.metadata ?? {} },
      });
      checkAgainstConfig(token.feedbackConfig, item.score);
      const stored = await storeFeedback(sql, token.workspaceId, item);
      return { feedbackId: stored.id };
    },
  };
}
