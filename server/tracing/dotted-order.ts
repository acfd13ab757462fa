/**
 * `dotted_order`: a run's position in its trace, root first, one segment per ancestor and one for the
 * run itself. A segment is `<YYYYMMDD>T<HHMMSS><ffffff>Z<run uuid>` (UTC, exactly six fractional
 * digits). The messages of {@link DottedOrderError} are the LangSmith server's own, so tools and
 * people who know those errors recognise them.
 */

/** One segment of a dotted_order. */
export interface DottedOrderSegment {
  /** `YYYYMMDDTHHMMSSffffff`: fixed width, so comparing strings compares instants. */
  readonly stamp: string;
  /** The run id of the segment. */
  readonly runId: string;
}

/** What a valid dotted_order says about its run. */
export interface ParsedDottedOrder {
  readonly segments: readonly DottedOrderSegment[];
  /** The first segment's run: the trace's root. */
  readonly traceId: string;
  /** The penultimate segment's run, null for a root. */
  readonly parentRunId: string | null;
  /** Every ancestor from the root down to the parent: an array of this parse's own, to keep. */
  readonly parentRunIds: string[];
  /** The run's own timestamp as ISO 8601 with microseconds. */
  readonly startTime: string;
}

/** A dotted_order that breaks a rule; the message names the run and the rule. */
export class DottedOrderError extends Error {
  override readonly name = "DottedOrderError";
}

/** The ids a run declares beside its dotted_order. */
export interface DeclaredIds {
  readonly id: string;
  readonly traceId: string | undefined;
  readonly parentRunId: string | undefined;
}

import { digitsAt, isRealDateTime, isUuidAt, UUID_LENGTH } from "./fixed-width-time.js";

const SEGMENT =
  /^(\d{8})T(\d{6})(?:\.?(\d*))Z([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
/** Microseconds: the width LangSmith requires (a 3-digit fraction is rejected). */
const FRACTION_DIGITS = 6;

/**
 * Parses and validates a dotted_order against the run's declared ids: every segment well formed,
 * the last segment is the run, a root has one segment and a child at least two, trace_id is the
 * first segment, parent_run_id the penultimate, and no segment is earlier than its parent's.
 */
export function parseDottedOrder(dottedOrder: string, run: DeclaredIds): ParsedDottedOrder {
  const parts = dottedOrder.split(".");
  const segments: DottedOrderSegment[] = [];
  for (let i = 0; i < parts.length; i++) segments.push(parseSegment(parts[i] as string, i));
  if (run.parentRunId === undefined && segments.length !== 1)
    throw new DottedOrderError(
      `dotted_order must contain a single part for root runs for ${describeRun(dottedOrder, run)}`,
    );
  if (run.parentRunId !== undefined && segments.length < 2) {
    throw new DottedOrderError(
      `invalid 'dotted_order': dotted_order must contain at least two parts for child runs for ${describeRun(dottedOrder, run)}`,
    );
  }
  const first = segments[0] as DottedOrderSegment;
  const last = segments[segments.length - 1] as DottedOrderSegment;
  if (last.runId.toLowerCase() !== run.id.toLowerCase()) {
    throw new DottedOrderError(
      `invalid 'dotted_order': run id ${run.id} does not match last part of dotted_order ${dottedOrder}`,
    );
  }
  if (run.traceId !== undefined && run.traceId.toLowerCase() !== first.runId.toLowerCase()) {
    throw new DottedOrderError(
      `invalid 'dotted_order': trace_id ${run.traceId} does not match first part of dotted_order ${dottedOrder} for run_id:${run.id}`,
    );
  }
  const parent = segments[segments.length - 2];
  if (
    parent &&
    run.parentRunId !== undefined &&
    parent.runId.toLowerCase() !== run.parentRunId.toLowerCase()
  ) {
    throw new DottedOrderError(
      `invalid 'dotted_order': parent_run_id ${run.parentRunId} does not match penultimate part of dotted_order ${dottedOrder} for run_id:${run.id}`,
    );
  }
  for (let i = 1; i < segments.length; i++) {
    const child = segments[i] as DottedOrderSegment;
    const above = segments[i - 1] as DottedOrderSegment;
    if (child.stamp < above.stamp) {
      throw new DottedOrderError(
        `dotted_order has timestamp ${readable(child.stamp)} earlier than parent timestamp ${readable(above.stamp)} for run_id:${run.id}`,
      );
    }
  }
  const parentRunIds: string[] = [];
  for (let i = 0; i < segments.length - 1; i++)
    parentRunIds.push((segments[i] as DottedOrderSegment).runId.toLowerCase());
  return {
    segments,
    traceId: first.runId.toLowerCase(),
    parentRunId: parent ? parent.runId.toLowerCase() : null,
    parentRunIds,
    startTime: isoOf(last.stamp),
  };
}

/**
 * The run as LangSmith's errors name it. A function of the module rather than a closure per call:
 * the server runs under tsx, whose transform gives every named closure its name at each creation.
 */
function describeRun(dottedOrder: string, run: DeclaredIds): string {
  return `run_id:${run.id} trace_id:${run.traceId ?? "None"} dotted_order:${dottedOrder} parent_run_id:${run.parentRunId ?? "None"}`;
}

/** The dotted_order of a root run that came without one: its start time and id. */
export function rootDottedOrder(startTimeIso: string, id: string): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})Z$/.exec(startTimeIso);
  if (!match) throw new Error(`start time ${startTimeIso} is not normalised`);
  const [, y, mo, d, h, mi, s, f] = match;
  return `${y}${mo}${d}T${h}${mi}${s}${f}Z${id}`;
}

/**
 * The last first segment parsed, and the last other one. A trace's runs arrive together and each
 * child's dotted_order starts with its root's segment, so the first entry spares most of the
 * parsing of a batch's first segments; the second, a run's own segment sent again (its patch).
 */
let lastFirst: { part: string; segment: DottedOrderSegment } | undefined;
let lastOther: { part: string; segment: DottedOrderSegment } | undefined;

function parseSegment(part: string, index: number): DottedOrderSegment {
  const last = index === 0 ? lastFirst : lastOther;
  if (last?.part === part) return last.segment;
  const segment = canonicalSegment(part) ?? parseNewSegment(part, index);
  if (index === 0) lastFirst = { part, segment };
  else lastOther = { part, segment };
  return segment;
}

/** Length of a segment as the SDKs write it: `<YYYYMMDD>T<HHMMSS><ffffff>Z<run uuid>`. */
const CANONICAL_SEGMENT_LENGTH = 22 + UUID_LENGTH;

/**
 * A segment in the exact layout the SDKs write (upper-case `T` and `Z`, a real date), read from its
 * character codes; undefined for anything else, which {@link parseNewSegment} then judges.
 */
function canonicalSegment(part: string): DottedOrderSegment | undefined {
  if (part.length !== CANONICAL_SEGMENT_LENGTH || part[8] !== "T" || part[21] !== "Z") return undefined;
  if (digitsAt(part, 15, FRACTION_DIGITS) < 0 || !isUuidAt(part, 22)) return undefined;
  const real = isRealDateTime(
    digitsAt(part, 0, 4),
    digitsAt(part, 4, 2),
    digitsAt(part, 6, 2),
    digitsAt(part, 9, 2),
    digitsAt(part, 11, 2),
    digitsAt(part, 13, 2),
  );
  return real ? { stamp: part.slice(0, 21), runId: part.slice(22) } : undefined;
}

function parseNewSegment(part: string, index: number): DottedOrderSegment {
  const match = SEGMENT.exec(part);
  if (!match) {
    const stamp = part.split("Z")[0] ?? part;
    throw new DottedOrderError(
      `invalid timestamp in dotted_order ${stamp} at index ${index}: expected <YYYYMMDD>T<HHMMSS><ffffff>Z<run uuid>`,
    );
  }
  const [, date, time, fraction = "", runId] = match as unknown as [string, string, string, string, string];
  if (fraction.length !== FRACTION_DIGITS) {
    throw new DottedOrderError(
      `invalid timestamp format in dotted_order: cannot parse '.${fraction}' as '.000000'`,
    );
  }
  const stamp = `${date}T${time}${fraction}`;
  const iso = isoOf(stamp);
  const ms = Date.parse(iso);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== iso.slice(0, 19)) {
    throw new DottedOrderError(
      `invalid timestamp in dotted_order ${stamp} at index ${index}: not a real date`,
    );
  }
  return { stamp, runId };
}

/** `YYYYMMDDTHHMMSSffffff` → `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
function isoOf(stamp: string): string {
  return `${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}T${stamp.slice(9, 11)}:${stamp.slice(11, 13)}:${stamp.slice(13, 15)}.${stamp.slice(15)}Z`;
}

/** `YYYYMMDDTHHMMSSffffff` → `YYYY-MM-DD HH:MM:SS.ffffff`, as LangSmith prints it. */
function readable(stamp: string): string {
  return isoOf(stamp).replace("T", " ").replace("Z", "");
}
