/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), written for the tests
 * from the format's specification: it refuses what a Prometheus server would refuse (bad names,
 * bad escapes, a sample before its family's TYPE, a family split in two, a repeated series, a
 * histogram without its `+Inf` bucket, `_count` or `_sum`) instead of guessing.
 */

/** One sample line. */
export interface Sample {
  /** The sample's own name (`x_bucket`, `x_sum`, `x_count` for histograms). */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A metric family: its TYPE, HELP and samples in order. */
export interface Family {
  readonly name: string;
  readonly type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  readonly help: string | undefined;
  readonly samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

/** Parses an exposition; throws naming the line number and what is wrong. */
export function parsePrometheusText(text: string): Map<string, Family> {
  if (text !== "" && !text.endsWith("\n")) throw new Error("the exposition must end with a newline");
  const families = new Map<string, Family>();
  const closed = new Set<string>();
  let current: Family | undefined;
  const seen = new Set<string>();
  const typed = new Set<string>();
  const lines = text.split("\n");
  lines.pop();
  lines.forEach((line, index) => {
    const at = `line ${index + 1}`;
    const fail = (why: string): never => {
      throw new Error(`${at}: ${why}: ${JSON.stringify(line)}`);
    };
    if (line.trim() === "") return;
    if (line.startsWith("#")) {
      const match = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (!match) return; // a plain comment
      const [, keyword, name = "", rest = ""] = match;
      if (!METRIC_NAME.test(name)) fail("bad metric name");
      const family = open(name);
      if (keyword === "TYPE") {
        if (!TYPES.has(rest)) fail("unknown type");
        if (family.samples.length > 0) fail("TYPE after the family's samples");
        if (family.type !== "untyped" || typed.has(name)) fail("second TYPE for the family");
        typed.add(name);
        (family as { type: Family["type"] }).type = rest as Family["type"];
      } else {
        if (family.help !== undefined) fail("second HELP for the family");
        (family as { help: string | undefined }).help = unescapeHelp(rest, fail);
      }
      return;
    }
    const sample = parseSample(line, fail);
    const familyName = familyOf(sample.name);
    const family = open(familyName);
    const key = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (seen.has(key)) fail("repeated series");
    seen.add(key);
    family.samples.push(sample);
  });
  for (const family of families.values()) checkFamily(family);
  return families;

  function open(name: string): Family {
    if (current?.name === name) return current;
    if (current) closed.add(current.name);
    if (closed.has(name)) throw new Error(`family ${name} appears in two places`);
    const family: Family = { name, type: "untyped", help: undefined, samples: [] };
    families.set(name, family);
    current = family;
    return family;
  }

  /** The family a sample belongs to: a histogram's or summary's suffixes name their family. */
  function familyOf(sampleName: string): string {
    if (current && sampleName === current.name) return sampleName;
    for (const suffix of ["_bucket", "_sum", "_count"]) {
      if (!sampleName.endsWith(suffix)) continue;
      const base = sampleName.slice(0, -suffix.length);
      const family = families.get(base);
      if (family && (family.type === "histogram" || family.type === "summary")) return base;
    }
    return sampleName;
  }
}

function parseSample(line: string, fail: (why: string) => never): Sample {
  const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
  if (!nameMatch) fail("a sample must start with a metric name");
  const name = nameMatch![0];
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === "{") {
    i += 1;
    while (line[i] !== "}") {
      const labelMatch = /^[^=]*/.exec(line.slice(i))![0];
      const label = labelMatch.trim();
      if (!LABEL_NAME.test(label)) fail(`bad label name ${JSON.stringify(label)}`);
      if (label in labels) fail(`label ${label} given twice`);
      i += labelMatch.length + 1;
      if (line[i] !== '"') fail("a label value must be quoted");
      i += 1;
      let value = "";
      for (;;) {
        const c = line[i];
        if (c === undefined) fail("unterminated label value");
        if (c === '"') break;
        if (c === "\\") {
          const next = line[i + 1];
          if (next === "\\") value += "\\";
          else if (next === '"') value += '"';
          else if (next === "n") value += "\n";
          else fail("bad escape in a label value");
          i += 2;
          continue;
        }
        value += c;
        i += 1;
      }
      labels[label] = value;
      i += 1;
      if (line[i] === ",") i += 1;
      else if (line[i] !== "}") fail("labels must be separated by commas");
    }
    i += 1;
  }
  if (line[i] !== " ") fail("a single space must separate the series from its value");
  const fields = line.slice(i + 1).split(" ");
  if (fields.length > 2 || fields[0] === "") fail("a sample has a value and an optional timestamp");
  const value = parseValue(fields[0]!, fail);
  if (fields[1] !== undefined && !/^-?\d+$/.test(fields[1])) fail("a timestamp is integer milliseconds");
  return { name, labels, value };
}

/**
 * A sample value as Prometheus reads it (Go's strconv.ParseFloat): a decimal float, or Inf, Infinity
 * and NaN in any case with an optional sign on the infinities (prom-client writes NaN as `Nan`).
 */
function parseValue(raw: string, fail: (why: string) => never): number {
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(raw);
  if (special) {
    if (special[2]!.toLowerCase() === "nan") return special[1] === "" ? Number.NaN : fail(`bad value ${raw}`);
    return special[1] === "-" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  }
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) fail(`bad value ${raw}`);
  return Number(raw);
}

function unescapeHelp(raw: string, fail: (why: string) => never): string {
  return raw.replace(/\\(.?)/g, (_, c: string) => {
    if (c === "\\") return "\\";
    if (c === "n") return "\n";
    return fail("bad escape in HELP");
  });
}

/** A histogram's series each need `_bucket`s ending in `le="+Inf"`, a `_sum` and a `_count`. */
function checkFamily(family: Family): void {
  for (const sample of family.samples) {
    const suffix = sample.name.slice(family.name.length);
    if (family.type === "histogram") {
      if (!["_bucket", "_sum", "_count"].includes(suffix))
        throw new Error(`histogram ${family.name} has a sample ${sample.name}`);
      if (suffix === "_bucket" && sample.labels.le === undefined)
        throw new Error(`a bucket of ${family.name} has no le label`);
    } else if (family.type !== "summary" && suffix !== "") {
      throw new Error(`${family.type} ${family.name} has a sample ${sample.name}`);
    }
  }
  if (family.type !== "histogram") return;
  for (const series of histogramSeries(family)) {
    const last = series.buckets.at(-1);
    if (last?.le !== Number.POSITIVE_INFINITY) throw new Error(`${family.name} lacks its +Inf bucket`);
    if (series.count === undefined || series.sum === undefined)
      throw new Error(`${family.name} lacks _count or _sum`);
  }
}

/** One labelled series of a histogram: its buckets sorted by bound, its sum and count. */
export interface HistogramSeries {
  readonly labels: Readonly<Record<string, string>>;
  readonly buckets: { le: number; count: number }[];
  readonly sum: number | undefined;
  readonly count: number | undefined;
}

/** Groups a histogram family's samples into series (by their labels other than `le`). */
export function histogramSeries(family: Family): HistogramSeries[] {
  const byKey = new Map<string, HistogramSeries & { sum?: number; count?: number }>();
  for (const sample of family.samples) {
    const { le, ...labels } = sample.labels;
    const key = JSON.stringify(Object.entries(labels).sort());
    let series = byKey.get(key);
    if (!series) {
      series = { labels, buckets: [], sum: undefined, count: undefined };
      byKey.set(key, series);
    }
    const suffix = sample.name.slice(family.name.length);
    if (suffix === "_bucket")
      series.buckets.push({ le: parseValue(le ?? "", throwing), count: sample.value });
    else if (suffix === "_sum") series.sum = sample.value;
    else if (suffix === "_count") series.count = sample.value;
  }
  for (const series of byKey.values()) series.buckets.sort((a, b) => a.le - b.le);
  return [...byKey.values()];
}

function throwing(why: string): never {
  throw new Error(why);
}

/** The value of the one sample of `family` whose labels include `labels`; undefined when none. */
export function sampleValue(
  families: ReadonlyMap<string, Family>,
  name: string,
  labels: Readonly<Record<string, string>> = {},
  sampleName = name,
): number | undefined {
  const matches = (families.get(name)?.samples ?? []).filter(
    (s) => s.name === sampleName && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (matches.length > 1)
    throw new Error(`${name} ${JSON.stringify(labels)} matches ${matches.length} series`);
  return matches[0]?.value;
}
