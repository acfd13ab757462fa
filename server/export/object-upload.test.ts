import { randomBytes } from "node:crypto";
import { once } from "node:events";
import {
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type S3Server, startS3Server } from "../../test/support/s3-server.js";
import { abortUnfinishedUploads, PART_BYTES, startObjectUpload } from "./object-upload.js";

const BUCKET = "uploads";
let s3: S3Server;
let client: S3Client;

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  client = s3.client();
});
afterAll(() => s3?.stop());

async function read(key: string): Promise<Buffer> {
  const res = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return Buffer.from(
    await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
  );
}

/** Writes `data` in 1 MiB chunks, waiting for `drain` whenever the body asks to. */
async function writeAll(body: NodeJS.WritableStream, data: Buffer): Promise<void> {
  for (let at = 0; at < data.length; at += 1 << 20) {
    if (!body.write(data.subarray(at, at + (1 << 20)))) await once(body, "drain");
  }
}

describe("startObjectUpload", () => {
  it("sends large objects as multipart uploads, byte for byte, two at once on reused part buffers", async () => {
    const first = randomBytes(2 * PART_BYTES + 12345);
    const second = randomBytes(3 * PART_BYTES + 54321);
    const third = randomBytes(PART_BYTES + 1);
    const send = async (key: string, data: Buffer) => {
      const upload = await startObjectUpload(client, BUCKET, key, "application/octet-stream");
      await writeAll(upload.body, data);
      upload.body.end();
      await upload.done;
    };
    await Promise.all([send("big-1.bin", first), send("big-2.bin", second)]);
    // Written after the first two, on the part buffers they gave back.
    await send("big-3.bin", third);
    expect((await read("big-1.bin")).equals(first)).toBe(true);
    expect((await read("big-2.bin")).equals(second)).toBe(true);
    expect((await read("big-3.bin")).equals(third)).toBe(true);
  });

  it("sends a small object with one PUT", async () => {
    const upload = await startObjectUpload(client, BUCKET, "small.bin", "application/octet-stream");
    upload.body.end(Buffer.from("hello"));
    await upload.done;
    expect((await read("small.bin")).toString()).toBe("hello");
  });

  it("holds the writer back while parts are uploading", async () => {
    const hold = s3.hold((method, key) => method === "PUT" && key === "held.bin");
    const upload = await startObjectUpload(client, BUCKET, "held.bin", "application/octet-stream");
    const data = randomBytes(8 * PART_BYTES);
    let accepted = 0;
    let finished = false;
    const writer = (async () => {
      for (let at = 0; at < data.length; at += 1 << 20) {
        const ok = upload.body.write(data.subarray(at, at + (1 << 20)));
        accepted += 1 << 20;
        if (!ok) await once(upload.body, "drain");
      }
      finished = true;
    })();
    // Both parts the upload sends at once are held by the server: the writer cannot get far.
    await hold.held(2);
    expect(finished).toBe(false);
    // The two parts in flight, one being cut, and the stream's own buffer of one part.
    expect(accepted).toBeLessThanOrEqual(4 * PART_BYTES);
    hold.release();
    await writer;
    upload.body.end();
    await upload.done;
    expect((await read("held.bin")).equals(data)).toBe(true);
  });

  it("leaves no object behind when aborted, and cancels the request in flight", async () => {
    const hold = s3.hold((method, key) => method === "PUT" && key === "aborted.bin");
    const upload = await startObjectUpload(client, BUCKET, "aborted.bin", "application/octet-stream");
    upload.body.end(Buffer.from("never stored"));
    const [held] = await hold.held(1);
    await upload.abort(new Error("stop"));
    await held?.abandoned;
    hold.release();
    await expect(upload.done).rejects.toThrow("stop");
    await expect(
      client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "aborted.bin" })),
    ).rejects.toMatchObject({
      name: "NotFound",
    });
  });
});

describe("aborting a multipart upload", () => {
  it("aborts the upload while its parts are in flight, leaving nothing in the bucket", async () => {
    const hold = s3.hold((method, key) => method === "PUT" && key === "aborted-multipart.bin");
    const upload = await startObjectUpload(
      client,
      BUCKET,
      "aborted-multipart.bin",
      "application/octet-stream",
    );
    const writing = writeAll(upload.body, randomBytes(2 * PART_BYTES)).catch(() => {});
    await hold.held(2);
    const open = async () =>
      (await client.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: "aborted-multipart" })))
        .Uploads ?? [];
    expect(await open()).toHaveLength(1);
    // The store still holds both parts: the abort does not wait for them.
    await upload.abort(new Error("stop"));
    expect(await open()).toEqual([]);
    hold.release();
    await writing;
    await expect(upload.done).rejects.toThrow("stop");
    await expect(
      client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "aborted-multipart.bin" })),
    ).rejects.toMatchObject({ name: "NotFound" });
  });
});

describe("abortUnfinishedUploads", () => {
  /** Starts a multipart upload of `key` with one part sent, as an attempt that died mid-file leaves it. */
  async function dangling(key: string): Promise<void> {
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }));
    await client.send(
      new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId, PartNumber: 1, Body: randomBytes(1024) }),
    );
  }

  const unfinished = async () =>
    ((await client.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }))).Uploads ?? [])
      .map((u) => u.Key)
      .sort();

  it("aborts the unfinished uploads under the prefix and leaves the others", async () => {
    await dangling("run-a/runs-1-00000.parquet");
    await dangling("run-a/runs-1-00003.parquet");
    await dangling("run-b/runs-2-00000.parquet");
    expect(await unfinished()).toEqual([
      "run-a/runs-1-00000.parquet",
      "run-a/runs-1-00003.parquet",
      "run-b/runs-2-00000.parquet",
    ]);
    expect(await abortUnfinishedUploads(client, BUCKET, "run-a/runs-1-")).toBe(2);
    expect(await unfinished()).toEqual(["run-b/runs-2-00000.parquet"]);
    expect(await abortUnfinishedUploads(client, BUCKET, "run-a/runs-1-")).toBe(0);
  });

  it("gives up quietly, leaving the uploads, when the store will not list them", async () => {
    await dangling("run-c/runs-3-00000.parquet");
    // Every try of the SDK (three) fails.
    s3.failNext((method, key) => method === "GET" && key === "", 3);
    await expect(abortUnfinishedUploads(client, BUCKET, "run-c/")).resolves.toBe(0);
    expect(await unfinished()).toContain("run-c/runs-3-00000.parquet");
  });
});
