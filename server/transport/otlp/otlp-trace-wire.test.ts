/**
 * The invariants of the hand-written OTLP decoder (otlp-trace-wire.ts), against protobuf-es's
 * reflection decoder and the binary input screen: on messages covering every field and value kind,
 * on a few hundred generated ones, on encodings protobuf-es never writes but must read, and on every
 * truncation and on byte flips of a real export.
 */
import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { describe, expect, it } from "vitest";
import {
  type ExportTraceServiceRequest,
  ExportTraceServiceRequestSchema,
} from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { AnyValue, KeyValue } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";
import type { Span_SpanKind } from "../../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import { findBinaryProblem } from "../input/binary-screen.js";
import { MAX_JSON_DEPTH } from "../input/input-limits.js";
import { decodeExportTraceRequest, OtlpWireError } from "./otlp-trace-wire.js";

const Schema = ExportTraceServiceRequestSchema;

/** protobuf-es's answer, as the fast decoder must give it (invariant 1). */
function reference(bytes: Uint8Array): ExportTraceServiceRequest {
  return fromBinary(Schema, bytes, { readUnknownFields: false });
}

function expectSameAsReference(bytes: Uint8Array): void {
  const fast = decodeExportTraceRequest(bytes);
  const slow = reference(bytes);
  expect(fast).toEqual(slow);
  expect(toJson(Schema, fast)).toEqual(toJson(Schema, slow));
}

/**
 * Invariants 2 and 3 on any bytes: the fast decoder accepts exactly what protobuf-es and the binary
 * screen both accept, and then answers as protobuf-es does; what it refuses, one of them refuses.
 */
function expectConsistent(bytes: Uint8Array): "accepted" | "refused" {
  let fast: ExportTraceServiceRequest | undefined;
  try {
    fast = decodeExportTraceRequest(bytes);
  } catch (error) {
    expect(error).toBeInstanceOf(OtlpWireError);
  }
  let slow: ExportTraceServiceRequest | undefined;
  try {
    slow = reference(bytes);
  } catch {
    slow = undefined;
  }
  const screened = findBinaryProblem(Schema, bytes);
  if (fast === undefined) {
    expect(slow === undefined || screened !== undefined, "refused what both others accept").toBe(true);
    return "refused";
  }
  expect(slow, "accepted what protobuf-es refuses").toBeDefined();
  expect(fast).toEqual(slow);
  return "accepted";
}

const text = (key: string, value: string): KeyValue =>
  ({ key, value: { value: { case: "stringValue", value } } }) as KeyValue;

/** Every field of every message, every AnyValue kind, values at their edges. */
function fullRequest(): ExportTraceServiceRequest {
  const values: AnyValue["value"][] = [
    { case: "stringValue", value: "h\u00e9llo \u{1f30d} \uFFFD" },
    { case: "boolValue", value: true },
    { case: "intValue", value: -1n },
    { case: "intValue", value: 9_223_372_036_854_775_807n },
    { case: "intValue", value: -9_223_372_036_854_775_808n },
    { case: "intValue", value: 2_147_483_648n },
    { case: "doubleValue", value: Number.NaN },
    { case: "doubleValue", value: -0.5 },
    { case: "bytesValue", value: new Uint8Array([0, 1, 255]) },
    {
      case: "arrayValue",
      value: { values: [{ value: { case: "stringValue", value: "a" } }, { value: { case: undefined } }] },
    } as AnyValue["value"],
    {
      case: "kvlistValue",
      value: { values: [text("nested", "x"), { key: "empty" } as KeyValue] },
    } as AnyValue["value"],
  ];
  const attributes = values.map((value, i) => ({ key: `k${i}`, value: { value } }) as KeyValue);
  return create(Schema, {
    resourceSpans: [
      {
        resource: {
          attributes,
          droppedAttributesCount: 3,
          entityRefs: [{ schemaUrl: "s", type: "service", idKeys: ["a", "b"], descriptionKeys: ["c"] }],
        },
        schemaUrl: "https://opentelemetry.io/schemas/1.26.0",
        scopeSpans: [
          {
            scope: { name: "scope", version: "1.0", attributes: [text("a", "b")], droppedAttributesCount: 1 },
            schemaUrl: "scope-schema",
            spans: [
              {
                traceId: new Uint8Array(16).fill(7),
                spanId: new Uint8Array(8).fill(9),
                traceState: "k=v",
                parentSpanId: new Uint8Array(8).fill(1),
                flags: 0xffffffff,
                name: "span",
                kind: 3,
                startTimeUnixNano: 1_700_000_000_123_456_789n,
                endTimeUnixNano: 18_446_744_073_709_551_615n,
                attributes,
                droppedAttributesCount: 4_294_967_295,
                events: [
                  { timeUnixNano: 1n, name: "exception", attributes: [text("exception.type", "E")] },
                  { timeUnixNano: 2n, name: "", droppedAttributesCount: 2 },
                ],
                droppedEventsCount: 5,
                links: [
                  {
                    traceId: new Uint8Array(16).fill(2),
                    spanId: new Uint8Array(8).fill(3),
                    traceState: "t",
                    attributes: [text("l", "m")],
                    droppedAttributesCount: 1,
                    flags: 256,
                  },
                ],
                droppedLinksCount: 6,
                status: { message: "bad", code: 2 },
              },
              { name: "defaults" },
              { kind: -1 as Span_SpanKind, status: {} },
            ],
          },
          {},
        ],
      },
      {},
    ],
  });
}

/** A small deterministic generator (mulberry32), so that failures reproduce. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function generated(next: () => number): ExportTraceServiceRequest {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(next() * 256));
  const word = () => pick(["", "a", "gen_ai.prompt", "\u00fc", "\u{1F600}", '{"x":[1,2]}', "z".repeat(200)]);
  const value = (depth: number): AnyValue["value"] => {
    switch (Math.floor(next() * (depth > 3 ? 5 : 7))) {
      case 0:
        return { case: "stringValue", value: word() };
      case 1:
        return { case: "boolValue", value: next() < 0.5 };
      case 2:
        return { case: "intValue", value: BigInt(Math.floor((next() - 0.5) * 2 ** 53)) };
      case 3:
        return { case: "doubleValue", value: (next() - 0.5) * 1e6 };
      case 4:
        return { case: "bytesValue", value: bytes(Math.floor(next() * 4)) };
      case 5:
        return {
          case: "arrayValue",
          value: {
            values: Array.from({ length: Math.floor(next() * 3) }, () => ({ value: value(depth + 1) })),
          },
        } as AnyValue["value"];
      default:
        return {
          case: "kvlistValue",
          value: { values: attributes(depth + 1) },
        } as AnyValue["value"];
    }
  };
  const attributes = (depth: number): KeyValue[] =>
    Array.from(
      { length: Math.floor(next() * 4) },
      () => ({ key: word(), value: { value: value(depth) } }) as KeyValue,
    );
  const span = () => ({
    traceId: bytes(pick([0, 16])),
    spanId: bytes(pick([0, 8])),
    parentSpanId: bytes(pick([0, 8])),
    name: word(),
    kind: Math.floor(next() * 6),
    startTimeUnixNano: BigInt(Math.floor(next() * 2 ** 52)) * 1000n,
    endTimeUnixNano: BigInt(Math.floor(next() * 2 ** 52)) * 1000n,
    attributes: attributes(1),
    events: Array.from({ length: Math.floor(next() * 2) }, () => ({
      name: word(),
      attributes: attributes(1),
    })),
    ...(next() < 0.5 ? { status: { code: Math.floor(next() * 3), message: word() } } : {}),
  });
  return create(Schema, {
    resourceSpans: Array.from({ length: 1 + Math.floor(next() * 2) }, () => ({
      ...(next() < 0.8 ? { resource: { attributes: attributes(1) } } : {}),
      scopeSpans: Array.from({ length: 1 + Math.floor(next() * 2) }, () => ({
        ...(next() < 0.8 ? { scope: { name: word(), version: word() } } : {}),
        spans: Array.from({ length: Math.floor(next() * 4) }, span),
      })),
    })),
  });
}

describe("decodeExportTraceRequest", () => {
  it("decodes every field and value kind as protobuf-es does", () => {
    expectSameAsReference(toBinary(Schema, fullRequest()));
    expectSameAsReference(new Uint8Array(0));
  });

  it("decodes generated requests as protobuf-es does", () => {
    const next = random(27);
    for (let i = 0; i < 300; i++) expectSameAsReference(toBinary(Schema, generated(next)));
  });

  it("reads what protobuf-es reads but never writes: repeats, merges, unknown fields, long varints", () => {
    const w = new BinaryWriter();
    w.tag(1, WireType.LengthDelimited).fork(); // resource_spans
    // resource sent twice: merged (attributes appended, the later count wins).
    w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).fork();
    w.tag(1, WireType.LengthDelimited).string("a").join().tag(2, WireType.Varint).uint32(1).join();
    w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).fork();
    w.tag(1, WireType.LengthDelimited).string("b").join().tag(2, WireType.Varint).uint32(2).join();
    // An unknown field of every wire type, a group among them.
    w.tag(900, WireType.Varint).uint64(2n ** 63n);
    w.tag(901, WireType.Bit64).fixed64(1n);
    w.tag(902, WireType.LengthDelimited).bytes(new Uint8Array([1, 2]));
    w.tag(903, WireType.Bit32).fixed32(5);
    w.tag(904, WireType.StartGroup).tag(1, WireType.Varint).uint32(1).tag(904, WireType.EndGroup);
    w.tag(2, WireType.LengthDelimited).fork(); // scope_spans
    w.tag(2, WireType.LengthDelimited).fork(); // a span
    w.tag(5, WireType.LengthDelimited).string("first");
    w.tag(5, WireType.LengthDelimited).string("last"); // last wins
    // kind as a 10-byte varint (a negative int32), the count with a padded (non-minimal) varint.
    w.tag(6, WireType.Varint).int32(-2);
    w.tag(10, WireType.Varint).raw(new Uint8Array([0x85, 0x80, 0x80, 0x00]));
    // status in two pieces: merged.
    w.tag(15, WireType.LengthDelimited).fork().tag(2, WireType.LengthDelimited).string("m").join();
    w.tag(15, WireType.LengthDelimited).fork().tag(3, WireType.Varint).int32(2).join();
    // An attribute whose value is sent twice: the kvlists merge, a scalar then replaces them.
    w.tag(9, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string("merged");
    for (const key of ["x", "y"]) {
      w.tag(2, WireType.LengthDelimited).fork().tag(6, WireType.LengthDelimited).fork();
      w.tag(1, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string(key).join();
      w.join().join();
    }
    w.join();
    w.tag(9, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).string("replaced");
    w.tag(2, WireType.LengthDelimited).fork().tag(6, WireType.LengthDelimited).fork().join().join();
    w.tag(2, WireType.LengthDelimited).fork().tag(3, WireType.Varint).int64(-5n).join();
    w.join();
    w.join().join().join();
    const bytes = w.finish();
    expectSameAsReference(bytes);
    const span = decodeExportTraceRequest(bytes).resourceSpans[0]?.scopeSpans[0]?.spans[0];
    expect(span?.name).toBe("last");
    expect(span?.kind).toBe(-2);
    const merged = span?.attributes[0]?.value?.value;
    expect(merged?.case === "kvlistValue" ? merged.value.values.map((kv) => kv.key) : []).toEqual(["x", "y"]);
    expect(span?.attributes[1]?.value?.value).toEqual({ case: "intValue", value: -5n });
  });

  it("refuses what protobuf-es refuses: truncations, long varints, bad UTF-8, stray end groups", () => {
    const valid = toBinary(Schema, fullRequest());
    const refuse = (bytes: Uint8Array) => {
      expect(() => decodeExportTraceRequest(bytes)).toThrow(OtlpWireError);
      expect(() => reference(bytes)).toThrow();
    };
    refuse(valid.subarray(0, valid.length - 1));
    refuse(new Uint8Array([0x0a, 0xff, 0xff, 0xff]));
    refuse(new Uint8Array([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]));
    refuse(new Uint8Array([0x0c]));
    // A span name of bytes that are not UTF-8: an overlong encoding and a lone continuation byte.
    for (const bad of [[0xc0, 0xaf], [0x80], [0xed, 0xa0, 0x80]]) {
      const w = new BinaryWriter();
      w.tag(1, WireType.LengthDelimited).fork().tag(2, WireType.LengthDelimited).fork();
      w.tag(2, WireType.LengthDelimited).fork().tag(5, WireType.LengthDelimited).bytes(new Uint8Array(bad));
      w.join().join().join();
      refuse(w.finish());
    }
  });

  it("refuses what the binary screen refuses: wrong wire types, overrunning lengths, deep nesting", () => {
    const wrongType = new BinaryWriter().tag(1, WireType.Varint).uint32(1).finish();
    expect(() => decodeExportTraceRequest(wrongType)).toThrow(/wire type 0/);
    expect(findBinaryProblem(Schema, wrongType)).toBeDefined();

    // A scope_spans whose length runs past its resource_spans.
    const overrun = new Uint8Array([0x0a, 0x02, 0x12, 0x05, 0, 0, 0, 0, 0]);
    expect(() => decodeExportTraceRequest(overrun)).toThrow(/past the end/);
    expect(findBinaryProblem(Schema, overrun)).toBeDefined();

    let value: AnyValue = {
      $typeName: "opentelemetry.proto.common.v1.AnyValue",
      value: { case: "stringValue", value: "leaf" },
    };
    for (let i = 0; i < MAX_JSON_DEPTH + 1; i++) {
      value = {
        $typeName: "opentelemetry.proto.common.v1.AnyValue",
        value: {
          case: "arrayValue",
          value: { $typeName: "opentelemetry.proto.common.v1.ArrayValue", values: [value] },
        },
      };
    }
    const deep = toBinary(
      Schema,
      create(Schema, {
        resourceSpans: [{ scopeSpans: [{ spans: [{ attributes: [{ key: "deep", value }] }] }] }],
      }),
    );
    expect(() => decodeExportTraceRequest(deep)).toThrow(/more than 128 levels/);
    expect(findBinaryProblem(Schema, deep)).toBeDefined();
  });

  it("accepts only what both others accept, on every truncation and on byte flips of an export", () => {
    const valid = toBinary(Schema, fullRequest());
    let refused = 0;
    for (let cut = 0; cut <= valid.length; cut++) {
      if (expectConsistent(valid.subarray(0, cut)) === "refused") refused++;
    }
    expect(refused).toBeGreaterThan(valid.length / 2);
    const next = random(7);
    for (let i = 0; i < 2000; i++) {
      const flipped = Uint8Array.from(valid);
      const at = Math.floor(next() * flipped.length);
      flipped[at] = Math.floor(next() * 256);
      expectConsistent(flipped);
    }
  });
});
