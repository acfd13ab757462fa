import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import type { S3Client } from "@aws-sdk/client-s3";
import { type EndpointPolicy, endpointHostProblem, guardedLookup } from "../net/endpoint-policy.js";
import type { S3Location } from "../store/export/bulk-export-destination-store.js";
import { DestinationError, destinationProblemOf, s3ErrorCode } from "./destination-error.js";
import { expectedOf, readBack } from "./object-check.js";
import { loadS3Sdk } from "./s3-sdk.js";

/** Static credentials of a destination. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** A destination as the exporter uses it: where, and with which credentials (none: the environment's). */
export interface S3Target {
  location: S3Location;
  credentials: S3Credentials | undefined;
  /** Which addresses the endpoint may reach. */
  policy: EndpointPolicy;
}

/** The endpoint policy of destinations: private addresses only when `allowPrivate` (the export setting). */
export function destinationPolicy(allowPrivate: boolean): EndpointPolicy {
  return { allowPrivate, allowSetting: "AGENTPLANE_EXPORT_ALLOW_PRIVATE_ENDPOINTS" };
}

/** Region the SDK signs for when the destination names none (S3-compatible stores ignore it). */
const DEFAULT_REGION = "us-east-1";
/** A store that does not accept a connection within 5 s is down or not there. */
const CONNECT_TIMEOUT_MS = 5_000;
/** One request (a part of 8 MiB at most) that takes over two minutes has stalled. */
const REQUEST_TIMEOUT_MS = 120_000;
/** The SDK's own retries of throttling and 5xx answers, inside one export attempt. */
const MAX_SDK_ATTEMPTS = 3;

/**
 * An S3 client for a destination. With an `endpoint_url` (an S3-compatible store: MinIO, GCS XML,
 * Ceph…) it addresses buckets by path and sends checksums only when an operation needs them, which
 * such stores handle; for AWS (no endpoint) it keeps the SDK's defaults. Without credentials the
 * SDK's standard environment chain applies (self-hosted only, as the seed says). Every connection
 * goes through the endpoint policy: an endpoint that is (or resolves to) a refused address throws
 * a {@link DestinationError} "Invalid endpoint", here or when a request connects.
 */
export async function createS3Client(target: S3Target): Promise<S3Client> {
  const { S3Client } = await loadS3Sdk();
  const { location, credentials, policy } = target;
  const custom = location.endpointUrl !== null;
  const refused =
    location.endpointUrl === null ? undefined : endpointHostProblem(location.endpointUrl, policy);
  if (refused) throw new DestinationError("Invalid endpoint", refused);
  const lookup = guardedLookup(policy);
  return new S3Client({
    region: location.region ?? DEFAULT_REGION,
    ...(custom
      ? {
          endpoint: location.endpointUrl ?? undefined,
          forcePathStyle: true,
          requestChecksumCalculation: "WHEN_REQUIRED" as const,
          responseChecksumValidation: "WHEN_REQUIRED" as const,
        }
      : {}),
    ...(credentials ? { credentials } : {}),
    maxAttempts: MAX_SDK_ATTEMPTS,
    requestHandler: {
      connectionTimeout: CONNECT_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      httpAgent: new HttpAgent({ keepAlive: true, lookup }),
      httpsAgent: new HttpsAgent({ keepAlive: true, lookup }),
    },
  });
}

/** Writes a small object in one PUT; answers the ETag the store gave it (undefined when none). */
export async function putObject(
  client: S3Client,
  bucket: string,
  key: string,
  body: string,
  contentType: string,
): Promise<string | undefined> {
  const { PutObjectCommand } = await loadS3Sdk();
  const answer = await client.send(
    new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }),
  );
  return answer.ETag;
}

/** What the test object of a destination check holds. */
const PROBE_TEXT = "agentplane checks that it can write bulk exports here; this file may be deleted.\n";
/** An S3 ETag: a quoted (or, from some stores, bare) non-empty token, optionally weak. */
const ETAG = /^(W\/)?"?[^"\s]+"?$/;

/**
 * Checks that a new destination is an S3 bucket that can be written: writes a small object under
 * `key`, which must be answered with an ETag; reads it back (where s3:GetObject is allowed) and
 * compares it with what was written; asks for a key that does not exist, which must be answered
 * with an S3 error document (NoSuchKey, or AccessDenied without s3:ListBucket); then deletes the
 * object. A refused delete is fine (the permission is optional): the object then stays under `tmp/`.
 * Throws a {@link DestinationError} saying what is wrong, in the seed's words, or the client's error
 * when the store failed in a way worth retrying (a 5xx answer).
 */
export async function checkDestination(target: S3Target, key: string): Promise<void> {
  const { DeleteObjectCommand } = await loadS3Sdk();
  const client = await createS3Client(target).catch((error: unknown) => {
    throw destinationProblemOf(error, true) ?? error;
  });
  const bucket = target.location.bucketName;
  const notS3 = (why: string) =>
    new DestinationError(
      "Invalid endpoint",
      `the endpoint does not answer like an S3-compatible store: ${why}`,
    );
  try {
    const etag = await putObject(client, bucket, key, PROBE_TEXT, "text/plain");
    if (etag === undefined || !ETAG.test(etag)) throw notS3("its answer to a PUT carries no ETag");
    const written = expectedOf(key, PROBE_TEXT);
    const seen = await readBack(client, bucket, key).catch((error: unknown) => {
      throw notS3Answer(error)
        ? notS3(`the object just written cannot be read back (${describe(error)})`)
        : error;
    });
    if (seen === "missing") throw notS3("the object just written is not there");
    if (seen !== "not allowed" && (seen.bytes !== written.bytes || seen.sha256 !== written.sha256))
      throw notS3("the object read back differs from the one written");
    const absent = await readBack(client, bucket, `${key}.absent`).catch((error: unknown) => {
      throw notS3Answer(error)
        ? notS3(`a key that does not exist is not answered with an S3 error document (${describe(error)})`)
        : error;
    });
    if (absent !== "missing" && absent !== "not allowed") throw notS3("it answers a key that does not exist");
    await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })).catch(() => {});
  } catch (error) {
    throw destinationProblemOf(error, true) ?? error;
  } finally {
    client.destroy();
  }
}

/**
 * Whether a failed request was answered, short of a server error, with something other than an S3
 * error document. Network trouble, 5xx answers and S3's own errors are left to
 * {@link destinationProblemOf}.
 */
function notS3Answer(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  return typeof status === "number" && status < 500 && s3ErrorCode(error) === undefined;
}

/** An SDK error in a few words: its name and HTTP status. */
function describe(error: unknown): string {
  const e = error as { name?: unknown; $metadata?: { httpStatusCode?: unknown } };
  const status = e?.$metadata?.httpStatusCode;
  return `${typeof e?.name === "string" ? e.name : "error"}${typeof status === "number" ? `, HTTP ${status}` : ""}`;
}
