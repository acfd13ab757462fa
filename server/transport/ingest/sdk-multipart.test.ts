import { describe, expect, it } from "vitest";
import { seededRandom } from "../../../test/support/seeded-random.js";
import { type MultipartLimits, type MultipartPart, parseMultipart } from "./multipart-parser.js";
import { parseMultipartBody } from "./sdk-multipart.js";

const BOUNDARY = "----LangSmithFormBoundaryabc123";
const LIMITS = { maxBytes: 64 * 1024 };

/** A body as the JS SDK writes it. */
function sdkBody(parts: { name: string; data: string; type?: string }[]): Buffer {
  let body = "";
  for (const { name, data, type } of parts) {
    body +=
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n` +
      `Content-Type: ${type ?? "application/json"}; length=${Buffer.byteLength(data)}\r\n\r\n${data}\r\n`;
  }
  return Buffer.from(`${body}--${BOUNDARY}--\r\n`);
}

const RUN = "01a1fc65-89ac-7000-8000-022bd5fdeb2d";
const BODY = sdkBody([
  { name: `post.${RUN}`, data: `{"id":"${RUN}","name":"n","run_type":"chain"}` },
  { name: `post.${RUN}.inputs`, data: '{"q":"--not a boundary\\r\\n"}' },
  { name: `attachment.${RUN}.notes`, data: "plain text", type: "text/plain" },
]);

/** What a parse gives, without the text only the fast path adds: the parts, or the error. */
async function outcome(parse: Promise<MultipartPart[]>): Promise<unknown> {
  return parse.then(
    (parts) => parts.map(({ text: _text, ...part }) => part),
    (error: unknown) => ({ error: String(error), kind: (error as { kind?: unknown }).kind }),
  );
}

async function expectSameAsGeneral(body: Buffer, limits: MultipartLimits = LIMITS): Promise<void> {
  const general = await outcome(parseMultipart([body], BOUNDARY, limits));
  expect(await outcome(parseMultipartBody(body, BOUNDARY, limits)), body.toString("latin1")).toEqual(general);
}

describe("parseMultipartBody", () => {
  it("reads an SDK body as text, with the same parts as the general parser", async () => {
    const parts = await parseMultipartBody(BODY, BOUNDARY, LIMITS);
    expect(parts.map((p) => p.text)).toEqual([
      `{"id":"${RUN}","name":"n","run_type":"chain"}`,
      '{"q":"--not a boundary\\r\\n"}',
      "plain text",
    ]);
    expect(parts.map((p) => p.data.toString("utf8"))).toEqual(parts.map((p) => p.text));
    await expectSameAsGeneral(BODY);
  });

  it("reads a UTF-8 body as text too, each part's bytes where the general parser finds them", async () => {
    const unicode = sdkBody([
      { name: `post.${RUN}`, data: '{"name":"ünïcode ✓ 🦜","q":"--x"}' },
      { name: `attachment.${RUN}.notes`, data: "naïve ✓ 🦜 text", type: "text/plain" },
      { name: `post.${RUN}.outputs`, data: '{"a":"é"}' },
    ]);
    const parts = await parseMultipartBody(unicode, BOUNDARY, LIMITS);
    expect(parts.map((p) => p.text)).toEqual([
      '{"name":"ünïcode ✓ 🦜","q":"--x"}',
      "naïve ✓ 🦜 text",
      '{"a":"é"}',
    ]);
    expect(parts.map((p) => p.data.toString("utf8"))).toEqual(parts.map((p) => p.text));
    await expectSameAsGeneral(unicode);
    // A header that is not ASCII, and bytes that are not UTF-8, are the general parser's to read.
    const unicodeName = sdkBody([{ name: "post.é", data: "{}" }]);
    const notUtf8 = Buffer.concat([BODY.subarray(0, 160), Buffer.from([0xc3, 0x28]), BODY.subarray(160)]);
    for (const body of [unicodeName, notUtf8]) {
      expect((await parseMultipartBody(body, BOUNDARY, LIMITS).catch(() => []))[0]?.text).toBeUndefined();
      await expectSameAsGeneral(body);
    }
  });

  it("leaves preambles, other layouts, short parts and oversized bodies to the general parser", async () => {
    for (const body of [
      Buffer.concat([Buffer.from("preamble\r\n"), BODY]),
      Buffer.from(BODY.toString("latin1").replace("Content-Type", "content-type"), "latin1"),
      Buffer.from(BODY.toString("latin1").replace(`--${BOUNDARY}\r\n`, `--${BOUNDARY} \r\n`), "latin1"),
      Buffer.from(BODY.toString("latin1").replace("length=10", "length=11"), "latin1"),
      BODY.subarray(0, BODY.length - 12),
    ]) {
      await expectSameAsGeneral(body);
    }
    await expectSameAsGeneral(BODY, { maxBytes: BODY.length - 1 });
  });

  it("answers exactly as the general parser for thousands of damaged bodies, ASCII or not", async () => {
    const random = seededRandom(11);
    const next = random.next;
    const pick = random.pick;
    // Bytes as Latin-1 characters: "\u00c3" and "\u00f0" open UTF-8 sequences, "\u0080" continues one.
    const bytes = [
      "\r",
      "\n",
      "-",
      '"',
      ";",
      "\\",
      "0",
      "9",
      "a",
      " ",
      ":",
      "\0",
      "\u00e9",
      "\u00c3",
      "\u0080",
      "\u00f0",
    ];
    const unicode = sdkBody([
      { name: `post.${RUN}`, data: `{"id":"${RUN}","name":"ünïcode ✓ 🦜"}` },
      { name: `attachment.${RUN}.notes`, data: "naïve ✓", type: "text/plain" },
    ]);
    for (let i = 0; i < 3000; i++) {
      const text = (i % 2 === 0 ? BODY : unicode).toString("latin1");
      const at = Math.floor(next() * text.length);
      const span = 1 + Math.floor(next() * 6);
      const damaged = pick([
        () => text.slice(0, at) + pick(bytes) + text.slice(at + 1),
        () => text.slice(0, at) + pick(bytes) + text.slice(at),
        () => text.slice(0, at) + text.slice(at + span),
        () => text.slice(0, at) + text.slice(at, at + span).repeat(2) + text.slice(at + span),
        () => text.slice(0, at),
      ])();
      await expectSameAsGeneral(Buffer.from(damaged, "latin1"));
    }
  });
});
