import { timestampDate } from "@bufbuild/protobuf/wkt";
import type {
  CreateBulkExportRequest,
  CreateDestinationRequest,
} from "../../../gen/agentplane/export/v1/bulk_export_service_pb.js";
import { dayPartitionCount } from "../../export/partitions.js";
import type { S3Credentials } from "../../export/s3-destination.js";
import type { S3Location } from "../../store/export/bulk-export-destination-store.js";
import { EXPORTABLE_RUN_FIELDS, type ExportableRunField } from "../../store/export/run-export-store.js";
import { invalid, requireUuid } from "../request-validation.js";
import { runFilterParameter } from "../tracing/run-query-request.js";

/** Longest display name: a label, not a document. */
const MAX_DISPLAY_NAME = 200;
/** S3 object keys are at most 1024 bytes; the partition path and file name need about 250 of them. */
const MAX_PREFIX = 700;
/** The OAS limits of endpoint URLs and credentials. */
const MAX_ENDPOINT_URL = 2048;
const MAX_ACCESS_KEY_ID = 255;
const MAX_SECRET = 2048;
/** Bucket names: 3 to 63 letters, digits, dots, hyphens or underscores, starting and ending alphanumeric. */
const BUCKET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$/;
/** Region names such as us-east-2 or auto. */
const REGION = /^[a-z0-9][a-z0-9-]{0,63}$/;
/** Ten years of daily partitions: far beyond any real export, and a bound on the rows one request inserts. */
const MAX_PARTITIONS = 3_660;
/** The seed's bounds of `interval_hours`. */
const MIN_INTERVAL_HOURS = 1;
const MAX_INTERVAL_HOURS = 168;

/** A validated CreateDestination request. */
export interface DestinationInput {
  displayName: string;
  location: S3Location;
  credentials: S3Credentials | undefined;
}

/** Validates a CreateDestination request; every problem is INVALID_ARGUMENT naming the field. */
export function parseDestinationRequest(request: CreateDestinationRequest): DestinationInput {
  if (request.destinationType !== undefined && request.destinationType !== "s3")
    throw invalid(
      `destination_type must be "s3", the only type; got ${JSON.stringify(request.destinationType)}`,
    );
  const displayName = request.displayName.trim();
  if (displayName.length === 0 || displayName.length > MAX_DISPLAY_NAME)
    throw invalid(`display_name must be 1 to ${MAX_DISPLAY_NAME} characters`);
  const config = request.config;
  if (!config)
    throw invalid('config is required: {"bucket_name": ..., "prefix": ..., "region" or "endpoint_url": ...}');
  if (!BUCKET_NAME.test(config.bucketName))
    throw invalid(
      `config.bucket_name must be 3 to 63 letters, digits, ".", "-" or "_", starting and ending with a letter or digit; got ${JSON.stringify(config.bucketName)}`,
    );
  const prefix = config.prefix.replace(/^\/+|\/+$/g, "");
  if (prefix.length > MAX_PREFIX) throw invalid(`config.prefix must be at most ${MAX_PREFIX} characters`);
  const badPart = prefix !== "" && prefix.split("/").some((p) => p === "" || p === "." || p === "..");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  if (/[\u0000-\u001f\u007f\\]/.test(prefix) || badPart)
    throw invalid(
      'config.prefix must be a path of "/"-separated names without empty, "." or ".." parts or control characters',
    );
  const region = config.region === undefined || config.region === "" ? null : config.region;
  if (region !== null && !REGION.test(region))
    throw invalid(`config.region must be a region name such as "us-east-2"; got ${JSON.stringify(region)}`);
  const endpointUrl =
    config.endpointUrl === undefined || config.endpointUrl === "" ? null : endpointOf(config.endpointUrl);
  if (endpointUrl === null && region === null)
    throw invalid(
      "config.region is required for AWS S3; for another S3-compatible store give config.endpoint_url",
    );
  return {
    displayName,
    location: {
      bucketName: config.bucketName,
      prefix,
      region,
      endpointUrl,
      includeBucketInPrefix: config.includeBucketInPrefix ?? false,
    },
    credentials: request.credentials ? credentialsOf(request.credentials) : undefined,
  };
}

function endpointOf(text: string): string {
  const problem =
    "config.endpoint_url must be an http:// or https:// URL of an S3-compatible store, without credentials, query or fragment";
  if (text.length > MAX_ENDPOINT_URL)
    throw invalid(`config.endpoint_url must be at most ${MAX_ENDPOINT_URL} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(`${problem}; got ${JSON.stringify(text)}`);
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.username ||
    url.password ||
    url.search ||
    url.hash
  )
    throw invalid(`${problem}; got ${JSON.stringify(text)}`);
  return text.replace(/\/+$/, "");
}

/** The credentials of an UpdateDestination request, validated (they are required there). */
export function parseUpdatedCredentials(c: CreateDestinationRequest["credentials"]): S3Credentials {
  if (!c)
    throw invalid(
      'credentials is required: {"access_key_id": ..., "secret_access_key": ..., "session_token"?: ...}',
    );
  return credentialsOf(c);
}

function credentialsOf(c: NonNullable<CreateDestinationRequest["credentials"]>): S3Credentials {
  if (c.accessKeyId.length === 0 || c.accessKeyId.length > MAX_ACCESS_KEY_ID)
    throw invalid(`credentials.access_key_id must be 1 to ${MAX_ACCESS_KEY_ID} characters`);
  if (c.secretAccessKey.length === 0 || c.secretAccessKey.length > MAX_SECRET)
    throw invalid(`credentials.secret_access_key must be 1 to ${MAX_SECRET} characters`);
  if (c.sessionToken !== undefined && c.sessionToken.length > MAX_SECRET)
    throw invalid(`credentials.session_token must be at most ${MAX_SECRET} characters`);
  return {
    accessKeyId: c.accessKeyId,
    secretAccessKey: c.secretAccessKey,
    ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}),
  };
}

/** A validated CreateBulkExport request (the destination and project still to be looked up). */
export interface ExportInput {
  destinationId: string;
  sessionId: string;
  startTime: Date;
  /** null for a schedule. */
  endTime: Date | null;
  intervalHours: number | null;
  filter: string | null;
  /** null: every exportable field. */
  exportFields: ExportableRunField[] | null;
  formatVersion: "v2_beta";
}

/** Validates a CreateBulkExport request; every problem is INVALID_ARGUMENT naming the field. */
export function parseExportRequest(request: CreateBulkExportRequest): ExportInput {
  if (request.bulkExportDestinationId === "") throw invalid("bulk_export_destination_id is required");
  const destinationId = requireUuid(request.bulkExportDestinationId, "bulk_export_destination_id");
  if (request.sessionId === "") throw invalid("session_id is required: the tracing project to export");
  const sessionId = requireUuid(request.sessionId, "session_id");
  if (!request.startTime) throw invalid("start_time is required (RFC 3339, inclusive)");
  const startTime = timestampDate(request.startTime);
  let endTime: Date | null = null;
  let intervalHours: number | null = null;
  if (request.intervalHours !== undefined) {
    intervalHours = request.intervalHours;
    if (intervalHours < MIN_INTERVAL_HOURS || intervalHours > MAX_INTERVAL_HOURS)
      throw invalid(
        `interval_hours must be ${MIN_INTERVAL_HOURS} to ${MAX_INTERVAL_HOURS}; got ${intervalHours}`,
      );
    if (request.endTime)
      throw invalid("end_time must be omitted for a scheduled export (one with interval_hours)");
  } else {
    if (!request.endTime)
      throw invalid("end_time is required for an export without interval_hours (RFC 3339, exclusive)");
    endTime = timestampDate(request.endTime);
    if (!(endTime.getTime() > startTime.getTime())) throw invalid("end_time must be after start_time");
    const days = dayPartitionCount(startTime, endTime);
    if (days > MAX_PARTITIONS)
      throw invalid(`the range spans ${days} days; an export covers at most ${MAX_PARTITIONS}: split it`);
  }
  const filterText = request.filter?.trim() ? request.filter : undefined;
  runFilterParameter("filter", filterText);
  if (request.formatVersion !== undefined && request.formatVersion !== "v2_beta")
    throw invalid(
      `format_version must be "v2_beta" (v1 is not supported); got ${JSON.stringify(request.formatVersion)}`,
    );
  if (request.format !== undefined && request.format !== "Parquet")
    throw invalid(`format must be "Parquet", the only format; got ${JSON.stringify(request.format)}`);
  if (request.compression !== undefined && request.compression !== "zstandard")
    throw invalid(
      `compression must be "zstandard", the only compression written; got ${JSON.stringify(request.compression)}`,
    );
  return {
    destinationId,
    sessionId,
    startTime,
    endTime,
    intervalHours,
    filter: filterText ?? null,
    exportFields: exportFieldsOf(request.exportFields),
    formatVersion: "v2_beta",
  };
}

function exportFieldsOf(fields: readonly string[]): ExportableRunField[] | null {
  if (fields.length === 0) return null;
  const known = EXPORTABLE_RUN_FIELDS as readonly string[];
  const seen = new Set<string>();
  for (const field of fields) {
    if (!known.includes(field))
      throw invalid(
        `export_fields: ${JSON.stringify(field)} is not an exportable field; choose from ${known.join(", ")}`,
      );
    if (seen.has(field)) throw invalid(`export_fields names ${JSON.stringify(field)} twice`);
    seen.add(field);
  }
  return fields as ExportableRunField[];
}
