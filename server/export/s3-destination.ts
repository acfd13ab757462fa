import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import type { S3Client } from "@aws-sdk/client-s3";
import { type EndpointPolicy, endpointHostProblem, guardedLookup } from "../net/endpoint-policy.js";
import type { S3Location } from "../store/bulk-export-destination-store.js";
import { DestinationError, destinationProblemOf } from "./destination-error.js";
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

/** Writes a small object in one PUT. */
export async function putObject(
  client: S3Client,
  bucket: string,
  key: string,
  body: string,
  contentType: string,
): Promise<void> {
  const { PutObjectCommand } = await loadS3Sdk();
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: contentType }));
}

/**
 * Checks that a new destination can be written: writes a small object under `key` and deletes it
 * again. A refused delete is fine (the permission is optional); the object then stays under `tmp/`.
 * Throws a {@link DestinationError} saying what is wrong, in the seed's words, or the client's error
 * when the store failed in a way worth retrying (a 5xx answer).
 */
export async function checkDestination(target: S3Target, key: string): Promise<void> {
  const { DeleteObjectCommand } = await loadS3Sdk();
  const client = await createS3Client(target).catch((error: unknown) => {
    throw destinationProblemOf(error, true) ?? error;
  });
  try {
    await putObject(
      client,
      target.location.bucketName,
      key,
      "agentplane checks that it can write bulk exports here; this file may be deleted.\n",
      "text/plain",
    );
    await client
      .send(new DeleteObjectCommand({ Bucket: target.location.bucketName, Key: key }))
      .catch(() => {});
  } catch (error) {
    throw destinationProblemOf(error, true) ?? error;
  } finally {
    client.destroy();
  }
}
