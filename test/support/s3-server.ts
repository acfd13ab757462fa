import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import { createScope, getCanonicalHeaders, getCanonicalQuery } from "@smithy/signature-v4";
import S3rver, { type KoaContext, type KoaMiddleware } from "s3rver";
import s3rverAccount from "s3rver/lib/models/account.js";
import { createMultipartUploadsMiddleware } from "./s3-multipart.js";

/** Region the clients sign for; s3rver ignores regions, and so does the verifier. */
const REGION = "us-east-1";
/** Payload hash of presigned URLs that carry none: S3 presigned requests never sign the body. */
const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";

/** An access key pair. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** Options of {@link startS3Server}. */
export interface S3ServerOptions {
  /** Buckets created before the server accepts requests. */
  buckets: string[];
  /** The one key pair the server accepts; a random pair when absent. */
  credentials?: S3Credentials;
}

/** An S3-compatible server for tests. */
export interface S3Server {
  /** Base URL, `http://127.0.0.1:<port>`; use path-style addressing. */
  endpoint: string;
  /** Region the clients sign for. */
  region: string;
  /** The accepted access key id. */
  accessKeyId: string;
  /** The accepted secret. */
  secretAccessKey: string;
  /**
   * A client for this server with the accepted credentials, path-style addressing and checksums only
   * when required (otherwise streamed uploads are stored with their aws-chunked framing). `overrides`
   * replace any of that, for example other credentials. The client is destroyed by `stop()`.
   */
  client(overrides?: Partial<S3ClientConfig>): S3Client;
  /** Adds another accepted key pair (a random one) and returns it. */
  addCredentials(): S3Credentials;
  /** Stops accepting a key pair: its requests then fail with InvalidAccessKeyId, as AWS answers a deleted key. */
  revokeCredentials(accessKeyId: string): void;
  /**
   * Holds every request whose method and object key `match` until the hold is released; signatures
   * are checked after release. For tests that must catch a client in the middle of an upload.
   */
  hold(match: (method: string, key: string) => boolean): S3Hold;
  /** Answers the next `count` requests that `match` with 500 InternalError, as a struggling store would. */
  failNext(match: (method: string, key: string) => boolean, count: number): void;
  /**
   * Answers every request that `match` with 403 AccessDenied, as a bucket policy without that
   * permission (s3:DeleteObject, s3:GetObject) would, until the returned function is called.
   */
  deny(match: (method: string, key: string) => boolean): () => void;
  /**
   * Serves the objects whose key `match` with their last byte changed on GET, as a store that
   * corrupted them would, until the returned function is called.
   */
  corruptReads(match: (key: string) => boolean): () => void;
  /** Every request so far (signature checks passed or not), in arrival order. */
  requests(): readonly { method: string; key: string }[];
  /** Destroys the clients, closes the server and deletes its files. */
  stop(): Promise<void>;
}

/** A request {@link S3Server.hold} is holding. */
export interface HeldRequest {
  method: string;
  /** The object key (path without the bucket, decoded). */
  key: string;
  /** Resolves when the client gives up on the request (closes it before an answer). */
  abandoned: Promise<void>;
}

/** Requests held by {@link S3Server.hold}. */
export interface S3Hold {
  /** Resolves once `count` requests are held, with them. */
  held(count: number): Promise<HeldRequest[]>;
  /** Lets every held request (and later ones) through. */
  release(): void;
}

/**
 * Starts s3rver in-process on 127.0.0.1, port 0, storing objects in a fresh temporary directory.
 * s3rver accepts any secret and anonymous requests, so a SigV4 verifier runs before it: requests must
 * be signed (Authorization header or presigned query) with the configured key pair.
 */
export async function startS3Server(options: S3ServerOptions): Promise<S3Server> {
  const credentials = options.credentials ?? randomCredentials();
  const directory = await mkdtemp(join(tmpdir(), "agentplane-s3-"));
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory,
    configureBuckets: options.buckets.map((name) => ({ name })),
  });
  const secrets = new Map([[credentials.accessKeyId, credentials.secretAccessKey]]);
  const holds: {
    match: (method: string, key: string) => boolean;
    held: (r: HeldRequest) => void;
    released: Promise<void>;
  }[] = [];
  server.middleware.unshift(createMultipartUploadsMiddleware(directory));
  server.middleware.unshift(createSigV4Verifier(secrets));
  const failures: { match: (method: string, key: string) => boolean; left: number }[] = [];
  const denials = new Set<(method: string, key: string) => boolean>();
  const corruptions = new Set<(key: string) => boolean>();
  const seen: { method: string; key: string }[] = [];
  server.middleware.unshift(async (ctx, next) => {
    const [path = ""] = splitOnce(ctx.originalUrl, "?");
    const key = decode(path.split("/").slice(2).join("/"));
    seen.push({ method: ctx.method, key });
    if ([...denials].some((match) => match(ctx.method, key)))
      return fail(ctx, { status: 403, code: "AccessDenied", message: "Access Denied" });
    if (ctx.method === "GET" && key !== "" && [...corruptions].some((match) => match(key))) {
      await next();
      if (ctx.status === 200) ctx.body = flipLastByte(await bodyBytes(ctx.body));
      return;
    }
    const failure = failures.find((f) => f.left > 0 && f.match(ctx.method, key));
    if (failure) {
      failure.left -= 1;
      return fail(ctx, {
        status: 500,
        code: "InternalError",
        message: "We encountered an internal error. Please try again.",
      });
    }
    for (const hold of holds) {
      if (!hold.match(ctx.method, key)) continue;
      let gone = false;
      const abandoned = new Promise<void>((resolve) =>
        ctx.res.once("close", () => {
          gone = !ctx.res.writableEnded;
          if (gone) resolve();
        }),
      );
      hold.held({ method: ctx.method, key, abandoned });
      await hold.released;
      // A request its client gave up on is dropped, even when its body had arrived in full.
      if (gone) return;
    }
    await next();
  });
  // s3rver looks the key up in its own registry after the verifier; it rejects keys it does not know.
  s3rverAccount.DUMMY_ACCOUNT.createKeyPair(credentials.accessKeyId, credentials.secretAccessKey);
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const clients: S3Client[] = [];

  return {
    endpoint,
    region: REGION,
    ...credentials,
    client(overrides = {}) {
      const client = new S3Client({
        region: REGION,
        endpoint,
        forcePathStyle: true,
        credentials,
        requestChecksumCalculation: "WHEN_REQUIRED",
        responseChecksumValidation: "WHEN_REQUIRED",
        ...overrides,
      });
      clients.push(client);
      return client;
    },
    addCredentials() {
      const added = randomCredentials();
      secrets.set(added.accessKeyId, added.secretAccessKey);
      s3rverAccount.DUMMY_ACCOUNT.createKeyPair(added.accessKeyId, added.secretAccessKey);
      return added;
    },
    revokeCredentials(accessKeyId) {
      secrets.delete(accessKeyId);
      s3rverAccount.DUMMY_ACCOUNT.revokeAccessKey(accessKeyId);
    },
    hold(match) {
      let release = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      const requests: HeldRequest[] = [];
      const waiters: { count: number; resolve: (r: HeldRequest[]) => void }[] = [];
      const held = (request: HeldRequest) => {
        requests.push(request);
        for (const w of waiters.filter((w) => w.count <= requests.length)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(requests.slice(0, w.count));
        }
      };
      const entry = { match, held, released };
      holds.push(entry);
      return {
        held: (count) =>
          requests.length >= count
            ? Promise.resolve(requests.slice(0, count))
            : new Promise((resolve) => waiters.push({ count, resolve })),
        release() {
          holds.splice(holds.indexOf(entry), 1);
          release();
        },
      };
    },
    failNext(match, count) {
      failures.push({ match, left: count });
    },
    deny(match) {
      denials.add(match);
      return () => denials.delete(match);
    },
    corruptReads(match) {
      corruptions.add(match);
      return () => corruptions.delete(match);
    },
    requests: () => [...seen],
    async stop() {
      for (const client of clients) client.destroy();
      for (const accessKeyId of secrets.keys()) s3rverAccount.DUMMY_ACCOUNT.revokeAccessKey(accessKeyId);
      const closed = server.close();
      server.httpServer?.closeAllConnections();
      await closed;
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** The bytes of a Koa body s3rver set: a stream of the object's file, or a buffer or string. */
async function bodyBytes(body: unknown): Promise<Buffer> {
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === "string") return Buffer.from(body);
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** A copy of `bytes` with its last byte changed (an empty object stays empty). */
function flipLastByte(bytes: Buffer): Buffer {
  const copy = Buffer.from(bytes);
  if (copy.length > 0) copy[copy.length - 1] = (copy[copy.length - 1] ?? 0) ^ 0xff;
  return copy;
}

/** A key pair shaped like AWS's: a 20-character id and a 40-character secret. */
function randomCredentials(): S3Credentials {
  return {
    accessKeyId: `AKIA${randomBytes(8).toString("hex").toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString("base64url"),
  };
}

/** The parts of a SigV4 signature, whether it came in the Authorization header or the query. */
interface SignedRequest {
  accessKeyId: string;
  /** `<yyyymmdd>/<region>/<service>/aws4_request`. */
  scope: string;
  /** The signing time, `yyyymmddThhmmssZ`. */
  amzDate: string;
  signedHeaders: string[];
  signature: string;
  payloadHash: string;
  /** Seconds a presigned URL stays valid; undefined for header authentication. */
  expiresIn?: number;
}

/** An S3 error answer. */
interface S3Error {
  status: number;
  code: string;
  message: string;
}

/**
 * A Koa middleware that accepts only requests signed with AWS Signature Version 4 by a known key: it
 * rebuilds the canonical request from what arrived (the raw path, as S3 signs it without re-encoding;
 * the query; the signed headers; the declared payload hash), signs it with the stored secret at the
 * request's own time, and compares. The body is not hashed: like s3rver, it trusts the declared hash.
 */
function createSigV4Verifier(secrets: Map<string, string>): KoaMiddleware {
  return async (ctx, next) => {
    const [rawPath = "", rawQuery = ""] = splitOnce(ctx.originalUrl, "?");
    const query = parseQuery(rawQuery);
    const signed = ctx.get("authorization") ? fromHeader(ctx) : fromQuery(query);
    if ("code" in signed) return fail(ctx, signed);
    const secret = secrets.get(signed.accessKeyId);
    if (secret === undefined) {
      return fail(ctx, {
        status: 403,
        code: "InvalidAccessKeyId",
        message: "The AWS Access Key Id you provided does not exist in our records.",
      });
    }
    if (
      signed.expiresIn !== undefined &&
      parseAmzDate(signed.amzDate) + signed.expiresIn * 1000 < Date.now()
    ) {
      return fail(ctx, { status: 403, code: "AccessDenied", message: "Request has expired" });
    }
    const expected = signature(secret, signed, canonicalRequest(ctx, rawPath, query, signed));
    if (!sameHex(expected, signed.signature)) {
      return fail(ctx, {
        status: 403,
        code: "SignatureDoesNotMatch",
        message:
          "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
      });
    }
    await next();
  };
}

/** Reads `Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`. */
function fromHeader(ctx: KoaContext): SignedRequest | S3Error {
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)$/.exec(
      ctx.get("authorization"),
    );
  if (!match) {
    return { status: 403, code: "AccessDenied", message: "Only AWS Signature Version 4 is accepted." };
  }
  const [, accessKeyId = "", scope = "", signedHeaders = "", signatureHex = ""] = match;
  const payloadHash = ctx.get("x-amz-content-sha256");
  if (!payloadHash) {
    return {
      status: 400,
      code: "InvalidRequest",
      message: "Missing required header for this request: x-amz-content-sha256",
    };
  }
  return {
    accessKeyId,
    scope,
    amzDate: ctx.get("x-amz-date"),
    signedHeaders: signedHeaders.split(";"),
    signature: signatureHex,
    payloadHash,
  };
}

/** Reads presigned-URL authentication (`X-Amz-Algorithm`, `X-Amz-Credential`, …) from the query. */
function fromQuery(query: Query): SignedRequest | S3Error {
  const param = (name: string) => {
    const value = query[name];
    return typeof value === "string" ? value : undefined;
  };
  if (param("X-Amz-Algorithm") === undefined) {
    return { status: 403, code: "AccessDenied", message: "Access Denied" };
  }
  const credential = param("X-Amz-Credential") ?? "";
  const [accessKeyId = "", scope = ""] = splitOnce(credential, "/");
  const amzDate = param("X-Amz-Date");
  const expires = Number(param("X-Amz-Expires"));
  const signedHeaders = param("X-Amz-SignedHeaders");
  const signatureHex = param("X-Amz-Signature");
  if (
    param("X-Amz-Algorithm") !== "AWS4-HMAC-SHA256" ||
    !scope ||
    !amzDate ||
    !signedHeaders ||
    !signatureHex
  ) {
    return {
      status: 400,
      code: "AuthorizationQueryParametersError",
      message:
        "Query-string authentication version 4 requires the X-Amz-Algorithm (AWS4-HMAC-SHA256), X-Amz-Credential, " +
        "X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.",
    };
  }
  const hashKey = Object.keys(query).find((k) => k.toLowerCase() === "x-amz-content-sha256");
  const declaredHash = hashKey === undefined ? undefined : query[hashKey];
  return {
    accessKeyId,
    scope,
    amzDate,
    signedHeaders: signedHeaders.split(";"),
    signature: signatureHex,
    payloadHash: typeof declaredHash === "string" ? declaredHash : UNSIGNED_PAYLOAD,
    expiresIn: Number.isFinite(expires) ? expires : 0,
  };
}

/** The SigV4 canonical request, with smithy's canonical query and header forms. */
function canonicalRequest(ctx: KoaContext, rawPath: string, query: Query, signed: SignedRequest): string {
  const names = [...signed.signedHeaders].sort();
  // The request as it arrived; smithy reads only its query and headers.
  const request = {
    method: ctx.method,
    protocol: "http:",
    hostname: ctx.get("host"),
    path: rawPath,
    query,
    headers: Object.fromEntries(names.map((name) => [name, ctx.get(name)])),
  };
  const headers = getCanonicalHeaders(request, undefined, new Set(names));
  return [
    ctx.method,
    rawPath,
    getCanonicalQuery(request),
    ...names.map((name) => `${name}:${headers[name] ?? ""}`),
    "",
    names.join(";"),
    signed.payloadHash,
  ].join("\n");
}

/** Signs the canonical request with a key derived from `secret` for the request's scope. */
function signature(secret: string, signed: SignedRequest, canonical: string): string {
  const [date = "", region = "", service = ""] = signed.scope.split("/");
  const stringToSign = [
    "AWS4-HMAC-SHA256",
    signed.amzDate,
    createScope(date, region, service),
    createHash("sha256").update(canonical).digest("hex"),
  ].join("\n");
  let key: Buffer = Buffer.from(`AWS4${secret}`);
  for (const part of [date, region, service, "aws4_request"])
    key = createHmac("sha256", key).update(part).digest();
  return createHmac("sha256", key).update(stringToSign).digest("hex");
}

/** Constant-time comparison of two hex strings. */
function sameHex(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** Milliseconds since the epoch of a `yyyymmddThhmmssZ` time (NaN when malformed). */
function parseAmzDate(value: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z`) : Number.NaN;
}

/** Decoded query parameters; a repeated name keeps every value. */
type Query = Record<string, string | string[]>;

/** Parses a raw query string. Unlike URLSearchParams, "+" stays "+": SigV4 clients encode spaces as %20. */
function parseQuery(raw: string): Query {
  const query: Query = {};
  for (const pair of raw.split("&")) {
    if (pair === "") continue;
    const [rawKey = "", rawValue = ""] = splitOnce(pair, "=");
    const key = decode(rawKey);
    const value = decode(rawValue);
    const previous = query[key];
    query[key] =
      previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
  }
  return query;
}

/** Percent-decodes, leaving malformed input as it is (its signature then fails to match). */
function decode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Splits at the first separator; the second part is "" when there is none. */
function splitOnce(value: string, separator: string): [string, string] {
  const at = value.indexOf(separator);
  return at < 0 ? [value, ""] : [value.slice(0, at), value.slice(at + separator.length)];
}

/** Answers with an S3 XML error. */
function fail(ctx: KoaContext, error: S3Error): void {
  ctx.status = error.status;
  ctx.type = "application/xml";
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${error.code}</Code><Message>${error.message}</Message></Error>`;
}
