/**
 * The TypeScript samples of a Markdown document, and how they run as tests (connect-es's practice:
 * the documentation's code is the test's code, so the two cannot drift apart). A line
 * `console.log(<expression>); // → <expected>` is a check: it still prints, and the runner records
 * whether the expression's value equals the expected one (a JavaScript expression, compared as
 * canonical JSON). A sample passes when it ends without an error and every check ran and held.
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { transform } from "esbuild";

const run = promisify(execFile);
/** A sample's output is a few lines; a generous bound so a chatty one still reports its result. */
const SAMPLE_OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024;

/** One ```ts block of a document. */
export interface DocSample {
  /** `<file> sample <n>`, for messages. */
  readonly name: string;
  /** The code as the document shows it. */
  readonly code: string;
  /** How many checks (`// →` lines) it holds. */
  readonly checks: number;
}

/** One check as a runner recorded it. */
export interface SampleCheck {
  readonly label: string;
  readonly actual: string;
  readonly expected: string;
}

/** What running a sample gave. */
export interface SampleResult {
  readonly checks: SampleCheck[];
  /** The error it ended with, if it did. */
  readonly error?: string;
}

const CHECK = /^(\s*)console\.log\((.*)\);\s*\/\/ → (.*)$/;

/**
 * The ```ts samples of `markdown`; with `section`, only those under the heading of that text (up
 * to the next heading of the same or a higher level).
 */
export function docSamples(markdown: string, file: string, section?: string): DocSample[] {
  let text = markdown;
  if (section !== undefined) {
    const heading = new RegExp(`^(#+) ${section.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m").exec(
      markdown,
    );
    if (!heading) throw new Error(`${file} has no heading "${section}"`);
    const rest = markdown.slice(heading.index + heading[0].length);
    const next = new RegExp(`^#{1,${heading[1]!.length}} `, "m").exec(rest);
    text = next ? rest.slice(0, next.index) : rest;
  }
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match, i) => {
    const code = match[1]!;
    return {
      name: `${file} sample ${i + 1}`,
      code,
      checks: code.split("\n").filter((line) => CHECK.test(line)).length,
    };
  });
}

/**
 * The sample as it runs: `baseUrl` in place of the documents' `http://127.0.0.1:2024`, and each
 * check line a call of the global `__check` that {@link CHECK_HARNESS} defines.
 */
export function runnableSample(sample: DocSample, baseUrl: string): string {
  return sample.code
    .replaceAll("http://127.0.0.1:2024", baseUrl)
    .split("\n")
    .map((line, i) => {
      const match = CHECK.exec(line);
      if (!match) return line;
      const label = JSON.stringify(`${sample.name}, line ${i + 1}`);
      return `${match[1]}__check(${label}, ${match[2]}, ${match[3]});`;
    })
    .join("\n");
}

/**
 * JavaScript that defines `globalThis.__check` for Node and browsers alike: it prints the value as
 * `console.log` would and records it in `globalThis.__checks` as canonical JSON (object keys
 * sorted, bigints as strings), beside the expected value.
 */
export const CHECK_HARNESS = `
const canonical = (value) => JSON.stringify(value === undefined ? null : value, (_key, v) =>
  typeof v === "bigint"
    ? String(v)
    : v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
);
globalThis.__checks = [];
globalThis.__check = (label, actual, expected) => {
  console.log(actual);
  globalThis.__checks.push({ label, actual: canonical(actual), expected: canonical(expected) });
};
`;

/** Checks of `result` whose value differed, and what went wrong otherwise, as one readable list. */
export function sampleProblems(sample: DocSample, result: SampleResult | undefined): string[] {
  if (!result) return [`${sample.name} did not run`];
  const problems = result.checks
    .filter((c) => c.actual !== c.expected)
    .map((c) => `${c.label}: printed ${c.actual}, the document says ${c.expected}`);
  if (result.error) problems.push(`${sample.name} failed: ${result.error}`);
  else if (result.checks.length !== sample.checks)
    problems.push(`${sample.name} ran ${result.checks.length} of its ${sample.checks} checks`);
  return problems;
}

/** What {@link runSamplesInNode} needs: where to write, and the server the samples call. */
export interface NodeSampleRun {
  /** A folder whose `node_modules` resolves the packages the samples import. */
  readonly dir: string;
  /** Replaces the documents' `http://127.0.0.1:2024`. */
  readonly baseUrl: string;
  /** Given to the samples as `AGENTPLANE_API_KEY`, as the documents tell users to set it. */
  readonly apiKey: string;
}

/**
 * Runs each sample as a Node ESM program of its own (TypeScript stripped by esbuild) from `dir`,
 * one after another, and answers the problems of all of them ({@link sampleProblems}); empty when
 * every sample ended without an error and every check held.
 */
export async function runSamplesInNode(samples: DocSample[], options: NodeSampleRun): Promise<string[]> {
  const runner = join(options.dir, "run-sample.mjs");
  await writeFile(
    runner,
    `import { pathToFileURL } from "node:url";
${CHECK_HARNESS}
let error;
try {
  await import(pathToFileURL(process.argv[2]).href);
} catch (e) {
  error = String(e?.stack ?? e);
}
console.log("__RESULT__" + JSON.stringify({ checks: globalThis.__checks, ...(error ? { error } : {}) }));
`,
  );
  const problems: string[] = [];
  for (const [i, sample] of samples.entries()) {
    const file = join(options.dir, `run-${i + 1}.mjs`);
    const { code } = await transform(runnableSample(sample, options.baseUrl), {
      loader: "ts",
      format: "esm",
    });
    await writeFile(file, code);
    const { stdout } = await run(process.execPath, [runner, file], {
      cwd: options.dir,
      env: { ...process.env, AGENTPLANE_API_KEY: options.apiKey },
      maxBuffer: SAMPLE_OUTPUT_LIMIT_BYTES,
    });
    const line = stdout.split("\n").find((l) => l.startsWith("__RESULT__"));
    problems.push(...sampleProblems(sample, line ? (JSON.parse(line.slice(10)) as SampleResult) : undefined));
  }
  return problems;
}
