import { describe, expect, it } from "vitest";
import { seededRandom } from "../../test/support/seeded-random.js";
import { parseDecimal } from "./row-group-encoder.js";

/** A random decimal text as numeric's output writes it: up to `digits` digits, `scale` of them decimals. */
function decimalText(random: () => number, digits: number, scale: number): string {
  let all = "";
  for (let i = 0; i < digits; i++) all += String(Math.floor(random() * 10));
  const whole = all.slice(0, Math.max(digits - scale, 0)).replace(/^0+(?=\d)/, "") || "0";
  const fraction = scale > 0 ? `.${all.slice(-scale).padStart(scale, "0")}` : "";
  return `${random() < 0.3 ? "-" : ""}${whole}${fraction}`;
}

describe("parseDecimal", () => {
  it("gives the double Number gives for every decimal text, on the fast path and off it", () => {
    // Seeded, so a failure names a reproducible text.
    const random = seededRandom(20261126).next;
    for (let i = 0; i < 200_000; i++) {
      const digits = 1 + Math.floor(random() * 30);
      const scale = Math.floor(random() * (digits + 3));
      const text = decimalText(random, digits, scale);
      const got = parseDecimal(Buffer.from(text));
      if (!Object.is(got, Number(text))) expect({ text, got }).toEqual({ text, got: Number(text) });
    }
  });

  it("reads numeric's special values and edge forms as Number does", () => {
    for (const text of [
      "0",
      "-0",
      "0.000",
      "NaN",
      "Infinity",
      "-Infinity",
      "0.0000006",
      "0.1",
      "0.30000000000000004",
      "999999999999999",
      "9999999999999999",
      "123456789012345.6",
      "0.0000000000000000000001",
      "0.00000000000000000000001",
      "1e5",
      "1.2.3",
      "-",
    ])
      expect(Object.is(parseDecimal(Buffer.from(text)), Number(text)), text).toBe(true);
  });
});
