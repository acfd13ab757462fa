import type { Logger } from "../logger.js";
import { createRunTracing, type RunTracing, type TraceRecord } from "../runtime/run-tracer.js";
import { runWithEncryptionContext } from "../store/crypto/encryption-scope.js";
import type { StoredDataCipher } from "../store/crypto/stored-data-cipher.js";
import type { IngestService } from "./ingest-service.js";

/**
 * Run tracing that writes through the in-process ingest service, as the runs' own workspace and the
 * key and user that created them: the records are validated, stored, counted in usage (under that
 * key and user) and exported as any trace is.
 * With encryption at rest on (`cipher`), inputs and outputs are JSON and encrypted as they are
 * stored; an error's text embeds JSON (an interrupt's values), whose allowlisted keys are encrypted here.
 */
export function createIngestRunTracing(
  ingest: IngestService,
  log: Logger,
  cipher?: StoredDataCipher | undefined,
): RunTracing {
  const sealErrors = (records: TraceRecord[]): TraceRecord[] =>
    records.map((r) =>
      typeof r.error === "string" && cipher ? { ...r, error: cipher.encryptEmbeddedJson(r.error) } : r,
    );
  return createRunTracing({
    log,
    // Outside any run's custom encryption context: the ingest writes batches that mix runs of
    // different callers, so traces are encrypted under the empty context, never under another
    // caller's.
    sink: (workspaceId, creator, batch) =>
      runWithEncryptionContext(undefined, () =>
        ingest.ingestRuns(
          { workspaceId, userId: creator.userId, apiKeyId: creator.apiKeyId },
          cipher ? { post: sealErrors(batch.post), patch: sealErrors(batch.patch) } : batch,
        ),
      ),
  });
}
