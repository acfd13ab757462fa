import { describe, expect, it } from "vitest";
import { parseDottedOrder, rootDottedOrder } from "./dotted-order.js";

const ROOT = "0e01bf50-474d-4536-810f-67d3ee7ea3e7";
const CHILD = "01a1fc65-89ac-7000-8000-022bd5fdeb2d";
const GRANDCHILD = "01a1fc65-89ac-7000-8000-022bd5fdeb2e";
const ROOT_SEGMENT = `20240919T171648521691Z${ROOT}`;
const CHILD_SEGMENT = `20240919T171648521692Z${CHILD}`;

describe("parseDottedOrder", () => {
  it("reads a root run: one segment, trace_id is its own id, start time with microseconds", () => {
    expect(parseDottedOrder(ROOT_SEGMENT, { id: ROOT, traceId: ROOT, parentRunId: undefined })).toMatchObject(
      {
        traceId: ROOT,
        parentRunId: null,
        parentRunIds: [],
        startTime: "2024-09-19T17:16:48.521691Z",
      },
    );
  });

  it("reads a grandchild: trace from the first segment, parent from the penultimate, every ancestor", () => {
    const dotted = `${ROOT_SEGMENT}.${CHILD_SEGMENT}.20240919T171648521693Z${GRANDCHILD}`;
    expect(parseDottedOrder(dotted, { id: GRANDCHILD, traceId: ROOT, parentRunId: CHILD })).toMatchObject({
      traceId: ROOT,
      parentRunId: CHILD,
      parentRunIds: [ROOT, CHILD],
      startTime: "2024-09-19T17:16:48.521693Z",
    });
  });

  it("rejects a root with several parts, with LangSmith's message", () => {
    const dotted = `${ROOT_SEGMENT}.${CHILD_SEGMENT}`;
    expect(() => parseDottedOrder(dotted, { id: CHILD, traceId: ROOT, parentRunId: undefined })).toThrow(
      `dotted_order must contain a single part for root runs for run_id:${CHILD} trace_id:${ROOT} dotted_order:${dotted} parent_run_id:None`,
    );
  });

  it("rejects a child with one part, with LangSmith's message", () => {
    const dotted = `20240919T171648521692Z${CHILD}`;
    expect(() => parseDottedOrder(dotted, { id: CHILD, traceId: ROOT, parentRunId: ROOT })).toThrow(
      `invalid 'dotted_order': dotted_order must contain at least two parts for child runs for run_id:${CHILD} trace_id:${ROOT} dotted_order:${dotted} parent_run_id:${ROOT}`,
    );
  });

  it("rejects a trace_id that is not the first part", () => {
    expect(() =>
      parseDottedOrder(ROOT_SEGMENT, { id: ROOT, traceId: CHILD, parentRunId: undefined }),
    ).toThrow(
      `invalid 'dotted_order': trace_id ${CHILD} does not match first part of dotted_order ${ROOT_SEGMENT}`,
    );
  });

  it("rejects a 3-digit fraction, with LangSmith's message", () => {
    expect(() =>
      parseDottedOrder(`20240919T171648111Z${ROOT}`, {
        id: ROOT,
        traceId: undefined,
        parentRunId: undefined,
      }),
    ).toThrow("invalid timestamp format in dotted_order: cannot parse '.111' as '.000000'");
  });

  it("rejects a segment without a Z separator, naming the segment's index", () => {
    expect(() =>
      parseDottedOrder(`${ROOT_SEGMENT}.20251208T144553541735000`, {
        id: CHILD,
        traceId: undefined,
        parentRunId: ROOT,
      }),
    ).toThrow("invalid timestamp in dotted_order 20251208T144553541735000 at index 1");
  });

  it("rejects an impossible date", () => {
    expect(() =>
      parseDottedOrder(`20241319T171648521691Z${ROOT}`, {
        id: ROOT,
        traceId: undefined,
        parentRunId: undefined,
      }),
    ).toThrow("not a real date");
  });

  it("rejects a child earlier than its parent, with LangSmith's message", () => {
    const dotted = `20251222T234308014739Z${ROOT}.20251222T234308012678Z${CHILD}`;
    expect(() => parseDottedOrder(dotted, { id: CHILD, traceId: ROOT, parentRunId: ROOT })).toThrow(
      "dotted_order has timestamp 2025-12-22 23:43:08.012678 earlier than parent timestamp 2025-12-22 23:43:08.014739",
    );
  });

  it("rejects a last part that is another run, and a parent that is not the penultimate part", () => {
    expect(() =>
      parseDottedOrder(ROOT_SEGMENT, { id: CHILD, traceId: undefined, parentRunId: undefined }),
    ).toThrow(`run id ${CHILD} does not match last part`);
    const dotted = `${ROOT_SEGMENT}.${CHILD_SEGMENT}`;
    expect(() => parseDottedOrder(dotted, { id: CHILD, traceId: ROOT, parentRunId: GRANDCHILD })).toThrow(
      `parent_run_id ${GRANDCHILD} does not match penultimate part`,
    );
  });
});

describe("rootDottedOrder", () => {
  it("builds the segment of a root run from its start time", () => {
    expect(rootDottedOrder("2024-09-19T17:16:48.521691Z", ROOT)).toBe(ROOT_SEGMENT);
  });

  it("reads a segment in the SDKs' layout as it reads any other (the fast path), valid or not", () => {
    for (const stamp of [
      "20240229T235959999999",
      "00000229T000000000000",
      "20260230T000000000000",
      "19000229T000000000000",
      "20260101T240000000000",
      "20261301T000000000000",
      "20260101T000060000000",
    ]) {
      // A lower-case t: the same segment, which only the general parser reads.
      const read = (segment: string) => {
        try {
          return parseDottedOrder(`${segment}Z${ROOT}`, {
            id: ROOT,
            traceId: undefined,
            parentRunId: undefined,
          }).startTime;
        } catch (error) {
          return (error as Error).message;
        }
      };
      expect(read(stamp)).toBe(read(stamp.replace("T", "t")));
    }
  });
});
