import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { batchFromParts } from "./multipart-batch.js";
import type { MultipartPart } from "./multipart-parser.js";

const RUN = "01a1fc65-89ac-7000-8000-022bd5fdeb2d";
const FEEDBACK = "01a1fc65-89ac-7000-8000-022bd5fdeb2e";

function part(name: string, data: string, headers: Record<string, string> = {}): MultipartPart {
  const contentType = headers["content-type"] ?? `application/json; length=${data.length}`;
  return {
    name,
    headers: new Map(Object.entries({ "content-type": contentType, ...headers })),
    contentType,
    declaredLength: /length=(\d+)/.exec(contentType) ? data.length : null,
    data: Buffer.from(data),
  };
}

function failure(parts: MultipartPart[]): ConnectError {
  try {
    batchFromParts(parts);
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected a failure");
}

describe("batchFromParts", () => {
  it("joins a run's main part with its field parts, and reads feedback and attachments", () => {
    const batch = batchFromParts([
      part(`post.${RUN}`, `{"id":"${RUN}","name":"n","run_type":"chain"}`),
      part(`post.${RUN}.inputs`, '{"q":1}'),
      part(`post.${RUN}.error`, '"boom"'),
      part(`patch.${RUN}.outputs`, '{"a":2}'),
      part(`feedback.${FEEDBACK}`, `{"run_id":"${RUN}","key":"k"}`),
      part(`attachment.${RUN}.image`, "PNG", { "content-type": "image/png; length=3" }),
    ]);
    expect(batch.post).toEqual([{ id: RUN, name: "n", run_type: "chain", inputs: { q: 1 }, error: "boom" }]);
    expect(batch.patch).toEqual([{ id: RUN, outputs: { a: 2 } }]);
    expect(batch.feedback).toEqual([{ id: FEEDBACK, run_id: RUN, key: "k" }]);
    expect(batch.attachments).toEqual([
      { runId: RUN, name: "image", contentType: "image/png", data: Buffer.from("PNG") },
    ]);
  });

  it("keeps the text of each run field as it arrived, for that parsed object only", () => {
    const batch = batchFromParts([
      part(`post.${RUN}`, `{"id":"${RUN}","name":"n","run_type":"chain"}`),
      part(`post.${RUN}.inputs`, '{ "q": 12345678901234567890 }'),
    ]);
    const inputs = batch.post?.[0]?.inputs as object;
    expect(batch.texts?.textOf(inputs)).toBe('{ "q": 12345678901234567890 }');
    expect(batch.texts?.textOf({ ...inputs })).toBe('{"q":12345678901234567000}');
  });

  it("rejects unknown parts and fields, bad ids, per-part encodings, missing lengths and bad JSON", () => {
    expect(failure([part(`put.${RUN}`, "{}")]).rawMessage).toContain(`unknown part "put.${RUN}"`);
    expect(failure([part(`post.${RUN}.metadata`, "{}")]).rawMessage).toContain(
      'unknown run field "metadata"',
    );
    expect(failure([part("post.abc", "{}")]).rawMessage).toContain('"abc" is not a UUID');
    expect(failure([part(`post.${RUN}`, "{}", { "content-encoding": "gzip" })]).rawMessage).toContain(
      "has its own Content-Encoding",
    );
    expect(failure([part(`post.${RUN}`, "{}", { "content-type": "application/json" })]).rawMessage).toContain(
      "needs a Content-Type header and a length",
    );
    const badJson = failure([part(`post.${RUN}`, "{nope")]);
    expect(badJson.code).toBe(Code.InvalidArgument);
    expect(badJson.rawMessage).toContain(`part "post.${RUN}" is not valid JSON`);
    expect(failure([part(`post.${RUN}`, "[1]")]).rawMessage).toBe(
      `part "post.${RUN}" must hold a JSON object`,
    );
  });
});
