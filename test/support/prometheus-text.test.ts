import { describe, expect, it } from "vitest";
import { histogramSeries, parsePrometheusText, sampleValue } from "./prometheus-text.js";

const VALID = `# HELP req_total Requests, with a \\\\ and a\\nnewline.
# TYPE req_total counter
req_total{route="/a",status="200"} 3
req_total{route="say \\"hi\\"\\\\",status="500"} 1 1700000000000
# TYPE lat histogram
lat_bucket{le="0.1"} 1
lat_bucket{le="1"} 2
lat_bucket{le="+Inf"} 2
lat_sum 0.6
lat_count 2
# a plain comment
up NaN
lag Nan
inf -Infinity
`;

describe("parsePrometheusText", () => {
  it("reads families, escapes, histograms and untyped samples", () => {
    const families = parsePrometheusText(VALID);
    expect(families.get("req_total")).toMatchObject({
      type: "counter",
      help: "Requests, with a \\ and a\nnewline.",
    });
    expect(sampleValue(families, "req_total", { status: "500" })).toBe(1);
    expect(families.get("req_total")?.samples[1]?.labels.route).toBe('say "hi"\\');
    const [series] = histogramSeries(families.get("lat")!);
    expect(series).toEqual({
      labels: {},
      buckets: [
        { le: 0.1, count: 1 },
        { le: 1, count: 2 },
        { le: Number.POSITIVE_INFINITY, count: 2 },
      ],
      sum: 0.6,
      count: 2,
    });
    expect(families.get("up")?.type).toBe("untyped");
    expect(Number.isNaN(sampleValue(families, "up"))).toBe(true);
    // What Go's ParseFloat, and so Prometheus, accepts; prom-client writes NaN as "Nan".
    expect(Number.isNaN(sampleValue(families, "lag"))).toBe(true);
    expect(sampleValue(families, "inf")).toBe(Number.NEGATIVE_INFINITY);
  });

  it.each([
    ["no final newline", "a 1"],
    ["a bad metric name", "1a 1\n"],
    ["a bad escape", 'a{x="\\t"} 1\n'],
    ["an unquoted label value", "a{x=1} 1\n"],
    ["a repeated series", 'a{x="1"} 1\na{x="1"} 2\n'],
    ["a family split in two", 'a 1\nb 1\na{x="2"} 1\n'],
    ["TYPE after samples", "a 1\n# TYPE a counter\n"],
    ["two TYPE lines", "# TYPE a counter\n# TYPE a counter\n"],
    ["an unknown type", "# TYPE a meter\n"],
    ["a bad value", "a one\n"],
    ["a signed NaN", "a -NaN\n"],
    ["a histogram without +Inf", '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n'],
    ["a histogram without _count", '# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_sum 1\n'],
    ["a bucket without le", "# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n"],
  ])("refuses %s", (_, text) => {
    expect(() => parsePrometheusText(text)).toThrow();
  });
});
