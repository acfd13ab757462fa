/**
 * Reading objects back to check what the bucket holds: the seed's "file size check" (s3:GetObject is
 * optional but recommended), done on every file an export writes and on a new destination's test
 * object. A read the credentials are not allowed is skipped, never an error.
 */
import { createHash } from "node:crypto";
import type { S3Client } from "@aws-sdk/client-s3";
import { DestinationError, s3ErrorCode } from "./destination-error.js";
import { loadS3Sdk } from "./s3-sdk.js";

/** What an object should be: its key, size and hex SHA-256 (as the manifest lists them). */
export interface ExpectedObject {
  key: string;
  bytes: number;
  sha256: string;
}

/** An object as read back; `missing` when the bucket has no such key, `not allowed` when the credentials may not read. */
export type ReadBack = { bytes: number; sha256: string } | "missing" | "not allowed";

/**
 * Reads `key` whole, streaming, and answers its size and SHA-256: the object's bytes pass through
 * a hash a chunk at a time, so a file of any size costs one chunk of memory.
 */
export async function readBack(
  client: S3Client,
  bucket: string,
  key: string,
  signal?: AbortSignal,
): Promise<ReadBack> {
  const { GetObjectCommand } = await loadS3Sdk();
  let body: AsyncIterable<Uint8Array> | undefined;
  try {
    const answer = await client.send(
      new GetObjectCommand({ Bucket: bucket, Key: key }),
      signal ? { abortSignal: signal } : {},
    );
    body = answer.Body as AsyncIterable<Uint8Array> | undefined;
  } catch (error) {
    const code = s3ErrorCode(error);
    if (code === "AccessDenied") return "not allowed";
    if (code === "NoSuchKey") return "missing";
    throw error;
  }
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of body ?? []) {
    hash.update(chunk);
    bytes += chunk.byteLength;
  }
  return { bytes, sha256: hash.digest("hex") };
}

/** The size and hex SHA-256 of bytes about to be written. */
export function expectedOf(key: string, data: string | Uint8Array): ExpectedObject {
  return {
    key,
    bytes: typeof data === "string" ? Buffer.byteLength(data) : data.byteLength,
    sha256: createHash("sha256").update(data).digest("hex"),
  };
}

/**
 * Checks that the bucket holds `expected` as it was written: the same size and SHA-256. Throws a
 * {@link DestinationError} "File check failed" saying what differs; resolves false when the
 * credentials may not read objects (the check is then skipped), true when it passed.
 */
export async function checkWrittenObject(
  client: S3Client,
  bucket: string,
  expected: ExpectedObject,
  signal?: AbortSignal,
): Promise<boolean> {
  const seen = await readBack(client, bucket, expected.key, signal);
  if (seen === "not allowed") return false;
  const wrote = `the export wrote ${expected.bytes} bytes with SHA-256 ${expected.sha256}`;
  if (seen === "missing")
    throw new DestinationError(
      "File check failed",
      `${expected.key} is not in the bucket after its upload; ${wrote}`,
    );
  if (seen.bytes !== expected.bytes || seen.sha256 !== expected.sha256)
    throw new DestinationError(
      "File check failed",
      `${expected.key} in the bucket is ${seen.bytes} bytes with SHA-256 ${seen.sha256}; ${wrote}`,
    );
  return true;
}
