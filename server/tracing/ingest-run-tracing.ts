import type { Logger } from "../logger.js";
import { createRunTracing, type RunTracing } from "../runtime/run-tracer.js";
import type { IngestService } from "./ingest-service.js";

/**
 * Run tracing that writes through the in-process ingest service, as the runs' own workspace with no
 * key or user: the records are validated, stored, counted in usage and exported as any trace is.
 */
export function createIngestRunTracing(ingest: IngestService, log: Logger): RunTracing {
  return createRunTracing({
    log,
    sink: (workspaceId, batch) => ingest.ingestRuns({ workspaceId, userId: null, apiKeyId: null }, batch),
  });
}
