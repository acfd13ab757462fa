import { Writable } from "node:stream";
import type { CompletedPart, S3Client } from "@aws-sdk/client-s3";
import { loadS3Sdk, type S3Sdk } from "./s3-sdk.js";

/** Multipart part size: S3's minimum is 5 MiB; 8 MiB keeps memory bounded and requests few. */
export const PART_BYTES = 8 * 1024 * 1024;
/** Parts uploaded at once: with PART_BYTES, at most 24 MiB of a file waits in memory for S3. */
const PARTS_IN_FLIGHT = 2;
/**
 * Part buffers held at most, in use or spare, while uploads run: enough for two uploads (a file
 * that completes while the next is written, as the exporter does) with every part in flight and
 * one being filled. A buffer given back is kept for the next part while fewer are held, so a
 * partition's memory stays the same from part to part and file to file (allocating and freeing
 * 8 MiB a part left the allocator's heap larger after each file); once no upload holds one, the
 * spares are let go.
 */
const PART_BUFFERS_HELD = 2 * (PARTS_IN_FLIGHT + 1);
const spareParts: Buffer[] = [];
/** Part buffers given out and not given back yet. */
let partsInUse = 0;

/** A part buffer: a spare one, or a new one when none is spare. */
function takePartBuffer(): Buffer {
  partsInUse++;
  return spareParts.pop() ?? Buffer.allocUnsafeSlow(PART_BYTES);
}

/**
 * Gives a part buffer back: kept for a later part when `reusable` (no request holds it any longer)
 * and fewer than {@link PART_BUFFERS_HELD} are held. A buffer of a failed or aborted request is not
 * reused, since a socket may still be sending from it.
 */
function releasePartBuffer(buffer: Buffer, reusable: boolean): void {
  partsInUse--;
  if (partsInUse === 0) spareParts.length = 0;
  else if (reusable && partsInUse + spareParts.length < PART_BUFFERS_HELD) spareParts.push(buffer);
}

/** An object being written. */
export interface ObjectUpload {
  /**
   * Write the object's bytes here, then end it. A write waits (backpressure) while
   * {@link PARTS_IN_FLIGHT} parts are uploading; `finish` is emitted once the object is complete.
   */
  readonly body: Writable;
  /** Resolves when the object is complete in the bucket; rejects when the upload fails or is aborted. */
  readonly done: Promise<void>;
  /**
   * Stops the upload: requests in flight are cancelled (never retried), `body` fails with `reason`,
   * and a multipart upload is aborted (best effort: some stores refuse) so no part is left behind.
   */
  abort(reason?: unknown): Promise<void>;
}

/**
 * Starts writing `key`. Bytes are cut into parts of {@link PART_BYTES} and sent as a multipart
 * upload; an object smaller than one part is sent with a single PUT when the body ends. Nothing
 * appears under `key` until the upload completes, so an attempt that dies leaves no partial object.
 * Every request carries the upload's abort signal, so an abort cancels it instead of letting the
 * SDK retry it later.
 */
export async function startObjectUpload(
  client: S3Client,
  bucket: string,
  key: string,
  contentType: string,
): Promise<ObjectUpload> {
  const sdk: S3Sdk = await loadS3Sdk();
  const {
    AbortMultipartUploadCommand,
    CompleteMultipartUploadCommand,
    CreateMultipartUploadCommand,
    PutObjectCommand,
    UploadPartCommand,
  } = sdk;
  const controller = new AbortController();
  const send = { abortSignal: controller.signal };
  let uploadId: string | undefined;
  let creating: Promise<string> | undefined;
  const parts: CompletedPart[] = [];
  const inFlight = new Set<Promise<void>>();
  /** The part being filled, and how much of it is. */
  let part: Buffer | undefined;
  let filled = 0;

  const multipartId = () => {
    creating ??= client
      .send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: contentType }), send)
      .then((created) => {
        if (!created.UploadId) throw new Error(`the store started no multipart upload for ${key}`);
        uploadId = created.UploadId;
        return uploadId;
      });
    return creating;
  };

  /**
   * Starts uploading the part being filled; resolves once fewer than the limit are in flight. Its
   * buffer is kept for a later part once the request is over, but not after a failure or an abort,
   * when a socket may still be sending from it.
   */
  async function sendPart(): Promise<void> {
    const buffer = part as Buffer;
    const data = buffer.subarray(0, filled);
    part = undefined;
    filled = 0;
    const partNumber = parts.length + 1;
    parts.push({ PartNumber: partNumber });
    const upload = multipartId()
      .then((id) =>
        client.send(
          new UploadPartCommand({
            Bucket: bucket,
            Key: key,
            UploadId: id,
            PartNumber: partNumber,
            Body: data,
          }),
          send,
        ),
      )
      .then(
        (result) => {
          parts[partNumber - 1] = { PartNumber: partNumber, ETag: result.ETag };
          releasePartBuffer(buffer, true);
        },
        (error: unknown) => {
          releasePartBuffer(buffer, false);
          throw error;
        },
      );
    const tracked = upload.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    // A failed part fails the next write or the final flush, whichever comes first.
    tracked.catch(() => {});
    while (inFlight.size >= PARTS_IN_FLIGHT) await Promise.race(inFlight);
  }

  let settle: { resolve: () => void; reject: (error: unknown) => void } | undefined;
  const done = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // Whoever awaits `done` sees its error; an unobserved failure must not end the process.
  done.catch(() => {});

  const body = new Writable({
    highWaterMark: PART_BYTES,
    write(chunk: Buffer, _encoding, callback) {
      const copyIn = async () => {
        for (let at = 0; at < chunk.length; ) {
          // An abort while a part was waiting to go ends the copying (and takes no buffer).
          controller.signal.throwIfAborted();
          part ??= takePartBuffer();
          const copied = chunk.copy(part, filled, at);
          filled += copied;
          at += copied;
          if (filled === PART_BYTES) await sendPart();
        }
      };
      copyIn().then(() => callback(), callback);
    },
    final(callback) {
      const finish = async () => {
        if (creating === undefined) {
          const buffer = part;
          const data = buffer?.subarray(0, filled) ?? Buffer.alloc(0);
          part = undefined;
          try {
            await client.send(
              new PutObjectCommand({ Bucket: bucket, Key: key, Body: data, ContentType: contentType }),
              send,
            );
          } catch (error) {
            if (buffer) releasePartBuffer(buffer, false);
            throw error;
          }
          if (buffer) releasePartBuffer(buffer, true);
          return;
        }
        if (filled > 0) await sendPart();
        await Promise.all(inFlight);
        await client.send(
          new CompleteMultipartUploadCommand({
            Bucket: bucket,
            Key: key,
            UploadId: await multipartId(),
            MultipartUpload: { Parts: parts },
          }),
          send,
        );
      };
      finish().then(
        () => {
          settle?.resolve();
          callback();
        },
        (error: unknown) => {
          settle?.reject(error);
          callback(error as Error);
        },
      );
    },
  });
  body.on("error", (error) => settle?.reject(error));

  return {
    body,
    done,
    async abort(reason) {
      const error = reason instanceof Error ? reason : new Error("the upload was aborted");
      controller.abort(error);
      body.destroy(error);
      if (part) releasePartBuffer(part, false);
      part = undefined;
      settle?.reject(error);
      const id = uploadId ?? (await creating?.catch(() => undefined));
      if (id === undefined) return;
      await client
        .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: id }))
        .catch(() => {});
    },
  };
}

/**
 * Aborts the unfinished multipart uploads under `prefix`: what an attempt that died mid-file (a
 * crash, a kill) left behind, which S3 keeps, and bills, until aborted. Best effort: a store that
 * does not list uploads, or credentials without s3:ListBucketMultipartUploads or
 * s3:AbortMultipartUpload, leave them to the bucket's lifecycle rule. Returns how many were aborted.
 */
export async function abortUnfinishedUploads(
  client: S3Client,
  bucket: string,
  prefix: string,
): Promise<number> {
  const { AbortMultipartUploadCommand, ListMultipartUploadsCommand } = await loadS3Sdk();
  let aborted = 0;
  let keyMarker: string | undefined;
  let uploadIdMarker: string | undefined;
  try {
    for (;;) {
      const page = await client.send(
        new ListMultipartUploadsCommand({
          Bucket: bucket,
          Prefix: prefix,
          ...(keyMarker ? { KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker } : {}),
        }),
      );
      for (const upload of page.Uploads ?? []) {
        if (!upload.Key || !upload.UploadId) continue;
        await client.send(
          new AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.Key, UploadId: upload.UploadId }),
        );
        aborted++;
      }
      if (!page.IsTruncated) return aborted;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  } catch {
    return aborted;
  }
}
