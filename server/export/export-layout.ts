import type { S3Location } from "../store/export/bulk-export-destination-store.js";

/** What names an export partition's folder. */
export interface PartitionAddress {
  exportId: string;
  tenantId: string;
  sessionId: string;
  /** Any instant of the partition's UTC day. */
  day: Date;
}

/** Width of a file's sequence number in its name: names sort in write order up to 99,999 files. */
const SEQUENCE_DIGITS = 5;

/**
 * The key prefix every object of a destination starts with: its `prefix` without surrounding
 * slashes, behind the bucket name when `include_bucket_in_prefix` is set; "" for neither.
 */
export function destinationRoot(
  location: Pick<S3Location, "bucketName" | "prefix" | "includeBucketInPrefix">,
): string {
  const parts = [location.includeBucketInPrefix ? location.bucketName : "", trimSlashes(location.prefix)];
  return parts.filter((p) => p !== "").join("/");
}

/**
 * The Hive-partitioned folder of a partition (the seed's layout):
 * `<root>/export_id=<id>/tenant_id=<id>/session_id=<id>/runs/year=<y>/month=<m>/day=<d>`, month and
 * day without leading zeros as LangSmith writes them.
 */
export function partitionFolder(
  location: Parameters<typeof destinationRoot>[0],
  at: PartitionAddress,
): string {
  const folder = [
    `export_id=${at.exportId}`,
    `tenant_id=${at.tenantId}`,
    `session_id=${at.sessionId}`,
    "runs",
    `year=${at.day.getUTCFullYear()}`,
    `month=${at.day.getUTCMonth() + 1}`,
    `day=${at.day.getUTCDate()}`,
  ].join("/");
  const root = destinationRoot(location);
  return root === "" ? folder : `${root}/${folder}`;
}

/**
 * The key of an export run's `sequence`-th file (from 0). Deterministic, so a retry that rewrites a
 * file after a crash overwrites the same object instead of adding one.
 */
export function dataFileKey(folder: string, runId: string, sequence: number): string {
  return `${dataFilePrefix(folder, runId)}${String(sequence).padStart(SEQUENCE_DIGITS, "0")}.parquet`;
}

/** What the keys of every file of an export run start with. */
export function dataFilePrefix(folder: string, runId: string): string {
  return `${folder}/runs-${runId}-`;
}

/** The key of an export run's manifest; the leading `_` makes Hive, Spark and DuckDB globs skip it. */
export function manifestKey(folder: string, runId: string): string {
  return `${folder}/_manifest-${runId}.json`;
}

/** The key of the object written to check a new destination (`<root>/tmp/…`, as LangSmith does). */
export function probeKey(location: Parameters<typeof destinationRoot>[0], id: string): string {
  const root = destinationRoot(location);
  const name = `tmp/agentplane-destination-check-${id}.txt`;
  return root === "" ? name : `${root}/${name}`;
}

function trimSlashes(value: string): string {
  return value.replace(/^\/+|\/+$/g, "");
}
