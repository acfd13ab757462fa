import { describe, expect, it } from "vitest";
import { createOutputLines } from "./output-lines.js";

describe("createOutputLines", () => {
  it("joins a line split across chunks and hands on only whole lines", () => {
    const lines: string[] = [];
    const out = createOutputLines((line) => lines.push(line));
    out.push("2026-11-26 LOG:  database system is re");
    expect(lines).toEqual([]);
    out.push("ady to accept connections\n2026-11-26 LOG:  check");
    expect(lines).toEqual(["2026-11-26 LOG:  database system is ready to accept connections"]);
    out.push("point starting\r\n\n");
    out.push("last words");
    out.flush();
    expect(lines).toEqual([
      "2026-11-26 LOG:  database system is ready to accept connections",
      "2026-11-26 LOG:  checkpoint starting",
      "last words",
    ]);
  });
});
