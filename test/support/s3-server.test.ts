import { createHash, createHmac } from "node:crypto";
import { Readable } from "node:stream";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { SignatureV4 } from "@smithy/signature-v4";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type S3Server, startS3Server } from "./s3-server.js";

const BUCKET = "exports";

/** The error an S3 call fails with, for assertions on its name and status. */
async function s3Failure(call: Promise<unknown>): Promise<S3ServiceException> {
  try {
    await call;
  } catch (error) {
    if (error instanceof S3ServiceException) return error;
    throw error;
  }
  throw new Error("the call succeeded");
}

/** What smithy hands a hash (its `SourceData`). */
type SourceData = string | ArrayBuffer | ArrayBufferView;

/** Bytes of what smithy hands a hash: a string (UTF-8), an ArrayBuffer or a view on one. */
function bytes(data: SourceData): Uint8Array {
  if (typeof data === "string") return Buffer.from(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(data);
}

/** SHA-256 in the shape smithy's signer expects (a hash, or an HMAC when given a key). */
class Sha256 {
  private readonly hash;
  constructor(key?: SourceData) {
    this.hash = key === undefined ? createHash("sha256") : createHmac("sha256", bytes(key));
  }
  update(data: SourceData): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

describe("startS3Server", () => {
  let s3: S3Server;
  let client: S3Client;

  beforeAll(async () => {
    s3 = await startS3Server({ buckets: [BUCKET] });
    client = s3.client();
  });
  afterAll(async () => {
    await s3.stop();
  });

  /** A presigned URL made the way the S3 presigner makes one (unsigned payload, query auth). */
  async function presign(
    method: string,
    key: string,
    options: { signingDate?: Date; expiresIn?: number } = {},
  ) {
    const { host } = new URL(s3.endpoint);
    const signer = new SignatureV4({
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      region: s3.region,
      service: "s3",
      sha256: Sha256,
      uriEscapePath: false,
    });
    const path = `/${BUCKET}/${key.split("/").map(encodeURIComponent).join("/")}`;
    const signed = await signer.presign(
      {
        method,
        protocol: "http:",
        hostname: "127.0.0.1",
        path,
        query: {},
        headers: { host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" },
      },
      options,
    );
    const query = Object.entries(signed.query ?? {})
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
      .join("&");
    return `${s3.endpoint}${path}?${query}`;
  }

  it("puts, heads, gets, lists and deletes objects", async () => {
    await client.send(
      new PutObjectCommand({ Bucket: BUCKET, Key: "a/one.txt", Body: "hello", ContentType: "text/plain" }),
    );
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "a/one.txt" }));
    expect(head.ContentLength).toBe(5);
    expect(head.ContentType).toBe("text/plain");
    const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: "a/one.txt" }));
    expect(await got.Body?.transformToString()).toBe("hello");
    const listed = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "a/" }));
    expect(listed.Contents?.map((o) => o.Key)).toEqual(["a/one.txt"]);

    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "a/one.txt" }));
    const missing = await s3Failure(client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "a/one.txt" })));
    expect(missing.$metadata.httpStatusCode).toBe(404);
  });

  it("stores a streamed upload byte for byte", async () => {
    const bytes = Buffer.alloc(6000, "x");
    await client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: "streamed.bin",
        Body: Readable.from([bytes.subarray(0, 2500), bytes.subarray(2500)]),
        ContentLength: bytes.length,
      }),
    );
    const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: "streamed.bin" }));
    expect(Buffer.from((await got.Body?.transformToByteArray()) ?? [])).toEqual(bytes);
  });

  it("round-trips keys with spaces, plus signs, percent signs and unicode", async () => {
    const keys = [
      "with space/a b.txt",
      "plus+sign/c+d.txt",
      "percent/100%.txt",
      "unicode/ünïcødé ✓ 日本.txt",
    ];
    for (const key of keys) {
      await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: key }));
      const got = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      expect(await got.Body?.transformToString()).toBe(key);
    }
    const listed = await client.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    expect(listed.Contents?.map((o) => o.Key)).toEqual(expect.arrayContaining(keys));
  });

  it("rejects a wrong secret with SignatureDoesNotMatch and stores nothing", async () => {
    const intruder = s3.client({
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: "not-the-secret" },
    });
    const error = await s3Failure(
      intruder.send(new PutObjectCommand({ Bucket: BUCKET, Key: "evil.txt", Body: "x" })),
    );
    expect(error.name).toBe("SignatureDoesNotMatch");
    expect(error.$metadata.httpStatusCode).toBe(403);
    const missing = await s3Failure(client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "evil.txt" })));
    expect(missing.$metadata.httpStatusCode).toBe(404);
  });

  it("rejects an unknown access key with InvalidAccessKeyId, including s3rver's built-in key", async () => {
    for (const accessKeyId of ["AKIAUNKNOWN000000000", "S3RVER"]) {
      const stranger = s3.client({ credentials: { accessKeyId, secretAccessKey: "S3RVER" } });
      const error = await s3Failure(stranger.send(new ListObjectsV2Command({ Bucket: BUCKET })));
      expect(error.name).toBe("InvalidAccessKeyId");
      expect(error.$metadata.httpStatusCode).toBe(403);
    }
  });

  it("denies what a deny rule matches with AccessDenied until it is lifted, and logs every request", async () => {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: "denied/a.txt", Body: "a" }));
    const lift = s3.deny((method, key) => method === "DELETE" && key.startsWith("denied/"));
    const failure = await s3Failure(
      client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "denied/a.txt" })),
    );
    expect([failure.name, failure.$metadata.httpStatusCode]).toEqual(["AccessDenied", 403]);
    const kept = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: "denied/a.txt" }));
    expect(await kept.Body?.transformToString()).toBe("a");
    lift();
    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "denied/a.txt" }));
    expect(
      s3
        .requests()
        .filter((r) => r.key === "denied/a.txt")
        .map((r) => r.method),
    ).toEqual(["PUT", "DELETE", "GET", "DELETE"]);
  });

  it("serves corrupted reads of what a rule matches, with the last byte changed", async () => {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: "corrupt/a.bin", Body: "abc" }));
    const restore = s3.corruptReads((key) => key.startsWith("corrupt/"));
    const read = async () =>
      Buffer.from(
        (await (
          await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: "corrupt/a.bin" }))
        ).Body?.transformToByteArray()) ?? [],
      );
    expect(await read()).toEqual(Buffer.from([0x61, 0x62, 0x63 ^ 0xff]));
    restore();
    expect((await read()).toString()).toBe("abc");
  });

  it("rejects anonymous requests with AccessDenied", async () => {
    const put = await fetch(`${s3.endpoint}/${BUCKET}/anonymous.txt`, { method: "PUT", body: "x" });
    expect(put.status).toBe(403);
    expect(await put.text()).toContain("<Code>AccessDenied</Code>");
    const get = await fetch(`${s3.endpoint}/${BUCKET}?list-type=2`);
    expect(get.status).toBe(403);
    expect(await get.text()).toContain("<Code>AccessDenied</Code>");
    const missing = await s3Failure(
      client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "anonymous.txt" })),
    );
    expect(missing.$metadata.httpStatusCode).toBe(404);
  });

  it("accepts presigned URLs and rejects tampered or expired ones", async () => {
    const key = "presigned/ä b+c.txt";
    const put = await fetch(await presign("PUT", key), { method: "PUT", body: "via url" });
    expect(put.status).toBe(200);
    const get = await fetch(await presign("GET", key));
    expect(await get.text()).toBe("via url");

    const url = await presign("GET", key);
    const signature = /X-Amz-Signature=([0-9a-f]+)/.exec(url)?.[1] ?? "";
    const altered = `${signature.slice(0, -1)}${signature.endsWith("0") ? "1" : "0"}`;
    const forged = await fetch(url.replace(signature, altered));
    expect(forged.status).toBe(403);
    expect(await forged.text()).toContain("<Code>SignatureDoesNotMatch</Code>");

    const anHourAgo = new Date(Date.now() - 3_600_000);
    const expired = await fetch(await presign("GET", key, { signingDate: anHourAgo, expiresIn: 60 }));
    expect(expired.status).toBe(403);
    expect(await expired.text()).toContain("Request has expired");
  });
});
