import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import type { NodeServerRequest } from "../rest/node-types.js";
import { maxRequestBodyBytes } from "./body-limit.js";
import { requestBytes, requestChunks } from "./request-chunks.js";

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

async function viaChunks(req: NodeServerRequest): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of requestChunks(req)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const text = Buffer.from(JSON.stringify({ runs: Array.from({ length: 300 }, (_, i) => ({ i, t: "é…" })) }));
const gz = gzipSync(text);
const cases: [string, Buffer[], Record<string, string>][] = [
  ["identity, in pieces", [text.subarray(0, 100), text.subarray(100)], {}],
  ["identity, named", [text], { "content-encoding": "identity" }],
  ["gzip, in pieces", [gz.subarray(0, 10), gz.subarray(10)], { "content-encoding": "gzip" }],
  ["x-gzip with spaces and capitals", [gz], { "content-encoding": " X-Gzip " }],
  ["two gzip members", [gz, gzipSync(Buffer.from("tail"))], { "content-encoding": "gzip" }],
  ["an empty gzip body", [], { "content-encoding": "gzip" }],
  ["an empty body", [], {}],
  ["data that is not gzip", [Buffer.from("not gzip at all")], { "content-encoding": "gzip" }],
  ["a truncated gzip body", [gz.subarray(0, gz.length - 12)], { "content-encoding": "gzip" }],
  ["an unsupported encoding", [text], { "content-encoding": "br" }],
  ["a declared length over the limit", [text], { "content-length": String(maxRequestBodyBytes + 1) }],
  [
    "gzip that inflates past the limit",
    [gzipSync(Buffer.alloc(maxRequestBodyBytes + 1))],
    { "content-encoding": "gzip" },
  ],
];

describe("requestBytes", () => {
  it.each(cases)("answers %s exactly as requestChunks does", async (_name, chunks, headers) => {
    const expected = await outcome(() => viaChunks(request(chunks, headers)));
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
