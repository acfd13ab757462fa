/**
 * The rows trace ingest writes, as the store takes them: the tracing layer (tracing/run-normalizer.ts)
 * validates what clients send into these shapes, and store/tracing/run-store.ts writes them. They live here,
 * below both, so that the store needs nothing from the layer above it.
 */

/** A JSON object. */
export type JsonObject = { [key: string]: unknown };

/** The project a run names: by id, or by name (created on first use). */
export type ProjectRef = { readonly id: string } | { readonly name: string };

/** A validated run, in the shape of a `runs` row (columns the ingest writes). */
export interface NormalizedRun {
  id: string;
  project: ProjectRef;
  traceId: string;
  parentRunId: string | null;
  parentRunIds: string[];
  referenceExampleId: string | null;
  /** Null only for a patch that does not carry it. */
  name: string | null;
  runType: string | null;
  startTime: string;
  endTime: string | null;
  isRoot: boolean;
  dottedOrder: string;
  /**
   * False for a patch without dotted_order: it does not say where the run sits, so it can only
   * update a stored run, never create one.
   */
  positioned: boolean;
  traceTier: string | null;
  inputs: JsonObject | null;
  outputs: JsonObject | null;
  error: string | null;
  extra: JsonObject | null;
  events: JsonObject[] | null;
  serialized: JsonObject | null;
  tags: string[];
  totalTokens: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  /** Decimal strings (numeric columns). */
  totalCost: string | null;
  promptCost: string | null;
  completionCost: string | null;
  firstTokenTime: string | null;
}

/** A validated feedback item. */
export interface NormalizedFeedback {
  id: string;
  runId: string;
  traceId: string | null;
  key: string;
  score: number | null;
  value: unknown;
  comment: string | null;
  correction: unknown;
  feedbackSource: JsonObject | null;
  sessionId: string | null;
}
