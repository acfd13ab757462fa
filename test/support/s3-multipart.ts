import { readdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { KoaContext, KoaMiddleware } from "s3rver";

/** Where s3rver's filesystem store keeps a bucket's unfinished multipart uploads, one folder each. */
function uploadsDir(directory: string, bucket: string): string {
  return join(directory, bucket, "._S3rver_uploads");
}

/** XML text with its five special characters escaped. */
function xml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * ListMultipartUploads (`GET /<bucket>?uploads&prefix=`) and AbortMultipartUpload
 * (`DELETE /<bucket>/<key>?uploadId=`), which s3rver 3.7 lacks (it answers NotImplemented and 405),
 * over s3rver's own store of unfinished uploads: tests can then see the uploads an export leaves
 * behind, and the exporter can abort them as it does on S3.
 */
export function createMultipartUploadsMiddleware(directory: string): KoaMiddleware {
  return async (ctx: KoaContext, next: () => Promise<void>) => {
    const [bucket = "", ...keyParts] = ctx.path.split("/").slice(1).map(decodeURIComponent);
    const key = keyParts.join("/");
    if (ctx.method === "GET" && key === "" && "uploads" in ctx.query) return list(ctx, directory, bucket);
    if (ctx.method === "DELETE" && key !== "" && typeof ctx.query.uploadId === "string")
      return abort(ctx, directory, bucket, key, ctx.query.uploadId);
    await next();
  };
}

async function list(ctx: KoaContext, directory: string, bucket: string): Promise<void> {
  const prefix = typeof ctx.query.prefix === "string" ? ctx.query.prefix : "";
  const ids = await readdir(uploadsDir(directory, bucket)).catch(() => [] as string[]);
  const uploads: string[] = [];
  for (const id of ids.sort()) {
    const key = await readFile(join(uploadsDir(directory, bucket), id, "key"), "utf8").catch(() => undefined);
    if (key === undefined || !key.startsWith(prefix)) continue;
    uploads.push(`<Upload><Key>${xml(key)}</Key><UploadId>${xml(id)}</UploadId></Upload>`);
  }
  ctx.status = 200;
  ctx.type = "application/xml";
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<ListMultipartUploadsResult><Bucket>${xml(bucket)}</Bucket><Prefix>${xml(prefix)}</Prefix><IsTruncated>false</IsTruncated>${uploads.join("")}</ListMultipartUploadsResult>`;
}

async function abort(
  ctx: KoaContext,
  directory: string,
  bucket: string,
  key: string,
  id: string,
): Promise<void> {
  const dir = join(uploadsDir(directory, bucket), id);
  const stored = await readFile(join(dir, "key"), "utf8").catch(() => undefined);
  if (stored !== key || !/^[0-9a-f]+$/.test(id) || !(await stat(dir).catch(() => undefined))) {
    ctx.status = 404;
    ctx.type = "application/xml";
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`;
    return;
  }
  await rm(dir, { recursive: true, force: true });
  ctx.status = 204;
}
