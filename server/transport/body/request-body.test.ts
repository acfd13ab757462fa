import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { malformedRequestError, unsupportedEncodingError } from "../rest/http-status.js";
import type { NodeServerRequest } from "../rest/node-types.js";
import { bodyTooLargeError, maxRequestBodyBytes } from "./body-limit.js";
import { requestBytes } from "./request-body.js";

/** A request whose body arrives as `chunks`, with `headers`. */
function request(chunks: Buffer[], headers: Record<string, string>): NodeServerRequest {
  return Object.assign(Readable.from(chunks, { objectMode: false }), { headers }) as never;
}

/** What a reader answered: the bytes, or the error's code and message. */
async function outcome(read: () => Promise<Buffer>): Promise<unknown> {
  try {
    return { bytes: (await read()).toString("base64") };
  } catch (error) {
    if (!(error instanceof ConnectError)) throw error;
    return { code: error.code, message: error.rawMessage };
  }
}

/** What a reader answers with the bytes `bytes`, or with `error`. */
const answered = (bytes: Buffer) => ({ bytes: bytes.toString("base64") });
const refused = (error: ConnectError) => ({ code: error.code, message: error.rawMessage });
const notGzip = refused(malformedRequestError("the request body is not valid gzip data"));

const text = Buffer.from(JSON.stringify({ runs: Array.from({ length: 300 }, (_, i) => ({ i, t: "é…" })) }));
const gz = gzipSync(text);
const cases: [string, Buffer[], Record<string, string>, unknown][] = [
  ["identity, in pieces", [text.subarray(0, 100), text.subarray(100)], {}, answered(text)],
  ["identity, named", [text], { "content-encoding": "identity" }, answered(text)],
  ["gzip, in pieces", [gz.subarray(0, 10), gz.subarray(10)], { "content-encoding": "gzip" }, answered(text)],
  ["x-gzip with spaces and capitals", [gz], { "content-encoding": " X-Gzip " }, answered(text)],
  [
    "two gzip members",
    [gz, gzipSync(Buffer.from("tail"))],
    { "content-encoding": "gzip" },
    answered(Buffer.concat([text, Buffer.from("tail")])),
  ],
  ["an empty gzip body", [], { "content-encoding": "gzip" }, answered(Buffer.alloc(0))],
  ["an empty body", [], {}, answered(Buffer.alloc(0))],
  ["data that is not gzip", [Buffer.from("not gzip at all")], { "content-encoding": "gzip" }, notGzip],
  ["a truncated gzip body", [gz.subarray(0, gz.length - 12)], { "content-encoding": "gzip" }, notGzip],
  [
    "an unsupported encoding",
    [text],
    { "content-encoding": "br" },
    refused(
      unsupportedEncodingError(
        'Content-Encoding "br" is not supported; send the body uncompressed, with gzip or with zstd',
      ),
    ),
  ],
  [
    "a declared length over the limit",
    [text],
    { "content-length": String(maxRequestBodyBytes + 1) },
    refused(bodyTooLargeError()),
  ],
  [
    "gzip that inflates past the limit",
    [gzipSync(Buffer.alloc(maxRequestBodyBytes + 1))],
    { "content-encoding": "gzip" },
    refused(bodyTooLargeError()),
  ],
];

describe("requestBytes", () => {
  it.each(cases)("answers %s", async (_name, chunks, headers, expected) => {
    expect(await outcome(() => requestBytes(request(chunks, headers)))).toEqual(expected);
  });

  it("inflates gzip to the original bytes and refuses what is not gzip with 400", async () => {
    const bytes = await requestBytes(request([gz], { "content-encoding": "gzip" }));
    expect(bytes.equals(text)).toBe(true);
    await expect(
      requestBytes(request([Buffer.from("nope")], { "content-encoding": "gzip" })),
    ).rejects.toThrow(/not valid gzip data/);
    await expect(
      requestBytes(
        request([gzipSync(Buffer.alloc(maxRequestBodyBytes + 1))], { "content-encoding": "gzip" }),
      ),
    ).rejects.toThrow(/larger than 32 MiB/);
  });
});
