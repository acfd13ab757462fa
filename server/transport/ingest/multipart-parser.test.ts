import { describe, expect, it } from "vitest";
import { boundaryOf, MultipartError, type MultipartLimits, parseMultipart } from "./multipart-parser.js";

const BOUNDARY = "----LangSmithFormBoundaryabc123";
const LIMITS = { maxBytes: 1024 * 1024 };

/** A body as the JS SDK writes it: Content-Disposition and `Content-Type: ...; length=N` per part. */
function sdkBody(parts: { name: string; data: string | Buffer; type?: string }[]): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const data = Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data);
    chunks.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"\r\n` +
          `Content-Type: ${part.type ?? "application/json"}; length=${data.length}\r\n\r\n`,
      ),
      data,
      Buffer.from("\r\n"),
    );
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

/** The body cut into chunks of `size` bytes, so boundaries, CRLFs and headers split across chunks. */
async function* chunked(body: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < body.length; i += size) yield body.subarray(i, i + size);
}

async function parseError(body: Buffer | string, limits: MultipartLimits = LIMITS): Promise<MultipartError> {
  const error = await parseMultipart(chunked(Buffer.from(body), 7), BOUNDARY, limits).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MultipartError);
  return error as MultipartError;
}

const binary = Buffer.from([0, 13, 10, 45, 45, 255, 13, 10]);
const parts = [
  { name: "post.1", data: '{"id":"1","name":"ünïcode ✓"}' },
  { name: "post.1.inputs", data: '{"q":"--not a boundary\\r\\n"}' },
  { name: "attachment.1.image", data: binary, type: "image/png" },
];

describe("parseMultipart", () => {
  it("finds the same parts whatever the chunk size, boundaries split across chunks included", async () => {
    const body = sdkBody(parts);
    for (const size of [1, 2, 3, 5, 17, 64, body.length]) {
      const parsed = await parseMultipart(chunked(body, size), BOUNDARY, LIMITS);
      expect(parsed.map((p) => p.name)).toEqual(["post.1", "post.1.inputs", "attachment.1.image"]);
      expect(parsed[0]?.data.toString()).toBe(parts[0]?.data);
      expect(parsed[1]?.data.toString()).toBe(parts[1]?.data);
      expect(parsed[2]?.data).toEqual(binary);
      expect(parsed[2]?.contentType).toBe("image/png; length=8");
      expect(parsed[2]?.declaredLength).toBe(8);
    }
  });

  it("accepts the JS SDK's UTF-16 length of non-ASCII JSON (less than its bytes): the boundary delimits", async () => {
    const json = '{"name":"ünïcode ✓"}';
    const body = Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="post.1"\r\n` +
        `Content-Type: application/json; length=${json.length}\r\n\r\n${json}\r\n--${BOUNDARY}--`,
    );
    const [part] = await parseMultipart(chunked(body, 4), BOUNDARY, LIMITS);
    expect(part?.data.toString()).toBe(json);
    expect(part?.declaredLength).toBe(json.length);
  });

  it("reads a Content-Length part header, a preamble, an epilogue and a part without headers", async () => {
    const body =
      `preamble to ignore\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name=post.2\r\n` +
      `Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}\r\n--${BOUNDARY}\r\n\r\nbare\r\n--${BOUNDARY}--\r\nepilogue`;
    await expect(parseError(body)).resolves.toMatchObject({
      message: expect.stringContaining("part 2 has no name"),
    });
    const good = body.replace(`\r\n\r\nbare\r\n--${BOUNDARY}--`, `--`);
    const parsed = await parseMultipart(chunked(Buffer.from(good), 3), BOUNDARY, LIMITS);
    expect(parsed).toHaveLength(1);
    expect(parsed[0]).toMatchObject({ name: "post.2", declaredLength: 2 });
    expect(parsed[0]?.headers.get("content-length")).toBe("2");
  });

  it("accepts a body with no parts", async () => {
    expect(await parseMultipart(chunked(Buffer.from(`--${BOUNDARY}--\r\n`), 2), BOUNDARY, LIMITS)).toEqual(
      [],
    );
  });

  it("rejects a body that ends before its closing boundary", async () => {
    const body = sdkBody(parts);
    const error = await parseError(body.subarray(0, body.length - 10));
    expect(error.kind).toBe("malformed");
    expect(error.message).toBe(
      `malformed multipart body: it ended before its closing boundary --${BOUNDARY}--`,
    );
    expect((await parseError("")).kind).toBe("malformed");
  });

  it("rejects a part that declares more bytes than it holds (a truncated part)", async () => {
    const body = sdkBody(parts).toString("latin1").replace("length=8", "length=80");
    expect((await parseError(Buffer.from(body, "latin1"))).message).toBe(
      'part "attachment.1.image" declares 80 bytes but holds 8: the body is truncated',
    );
  });

  it("rejects bad header lines, bad lengths, junk after a boundary and oversized headers", async () => {
    const head = `--${BOUNDARY}\r\n`;
    const tail = `\r\n\r\n{}\r\n--${BOUNDARY}--`;
    expect((await parseError(`${head}no colon here${tail}`)).message).toContain(
      'bad header line "no colon here"',
    );
    expect(
      (await parseError(`${head}Content-Disposition: form-data; name="a"\r\nContent-Length: x${tail}`))
        .message,
    ).toBe('part "a" declares a length that is not a number: "x"');
    expect((await parseError(`--${BOUNDARY}junk\r\n`)).message).toContain("is not followed by CRLF");
    const huge = `${head}X-Big: ${"a".repeat(100)}${tail}`;
    expect((await parseError(huge, { maxBytes: 1024, maxHeaderBytes: 50 })).message).toContain(
      "exceed 50 bytes",
    );
  });

  it("reads header blocks laid out as the SDK writes them exactly as the general reading does", async () => {
    // Lower-case header names always take the general reading; the SDK's own casing takes the fast
    // one when the block fits its layout. Both must give the same parts, or the same error.
    const outcome = async (block: string) =>
      parseMultipart(
        chunked(Buffer.from(`--${BOUNDARY}\r\n${block}\r\n\r\n{}\r\n--${BOUNDARY}--`), 5),
        BOUNDARY,
        {
          maxBytes: 1024,
        },
      ).then(
        (parsed) => ({ parsed }),
        (error: unknown) => ({ error: (error as Error).message }),
      );
    const general = (block: string) =>
      block.replace("Content-Disposition:", "content-disposition:").replace("Content-Type:", "content-type:");
    const blocks = [
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json; length=2',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json; length=2  ',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json; length=3',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json; length=',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json; length=2 x',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json; LENGTH=2',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json; length=2; length=9',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json;length=2',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: application/json; length=2\r\nContent-Encoding: gzip',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Type: text/plain\rx; length=2',
      'Content-Disposition: form-data; name=""\r\nContent-Type: application/json; length=2',
      'Content-Disposition: form-data; name="a\\"b"\r\nContent-Type: application/json; length=2',
      'Content-Disposition: form-data; name="a\r\nContent-Type: application/json; length=2',
      'Content-Disposition: form-data; name="post.1"x\r\nContent-Type: application/json; length=2',
      'Content-Disposition: form-data; name="a\\\\"\r\nContent-Type: application/json; length=2',
      'Content-Disposition: form-data; name="post.1"\r\nContent-Length: 2',
      'Content-Disposition: form-data; name="p\u00e9\u0000"\r\nContent-Type: application/json; length=2',
    ];
    for (const block of blocks) {
      const fast = await outcome(block);
      expect(fast, block).toEqual(await outcome(general(block)));
    }
    expect(await outcome(blocks[0] as string)).toMatchObject({
      parsed: [{ name: "post.1", contentType: "application/json; length=2", declaredLength: 2 }],
    });
  });

  it("stops at the size limit", async () => {
    const error = await parseError(sdkBody(parts), { maxBytes: 32 });
    expect(error).toMatchObject({
      kind: "too-large",
      message: "the request body exceeds the limit of 32 bytes",
    });
  });
});

describe("boundaryOf", () => {
  it("reads plain and quoted boundaries", () => {
    expect(boundaryOf(`multipart/form-data; boundary=${BOUNDARY}`)).toBe(BOUNDARY);
    expect(boundaryOf('Multipart/Form-Data; charset=utf-8; boundary="a b"')).toBe("a b");
  });

  it("rejects other types and missing or overlong boundaries", () => {
    expect(() => boundaryOf("application/json")).toThrow(
      'Content-Type must be multipart/form-data with a boundary, got "application/json"',
    );
    expect(() => boundaryOf(undefined)).toThrow('got "(none)"');
    expect(() => boundaryOf("multipart/form-data")).toThrow("needs a boundary parameter");
    expect(() => boundaryOf(`multipart/form-data; boundary=${"x".repeat(71)}`)).toThrow(
      "needs a boundary parameter",
    );
  });
});
