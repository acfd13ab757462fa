import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/** The folder whose files the graph covers. */
const SERVER = dirname(fileURLToPath(import.meta.url));
/**
 * Folders of the layers (design.md) by tier: transport → services → {jobs, runtime, tracing,
 * export} → store. A layer imports its own tier and those below; a leaf imports none of them.
 */
const LAYER_TIER: Record<string, number> = {
  transport: 4,
  services: 3,
  jobs: 2,
  runtime: 2,
  tracing: 2,
  export: 2,
  store: 1,
};
const LAYERS = Object.keys(LAYER_TIER);
/** Modules at the top of server/ that every layer may import, and so may import no layer. */
const LEAVES = ["config.ts", "logger.ts", "clock.ts", "ids.ts", "json-bytes.ts", "stderr-lines.ts"];
/**
 * Folders of leaves too: setting types and their parsers, shared by config.ts and the layers; the
 * outbound HTTP policies config.ts validates webhook settings with; the dependency patches, which
 * the store and the composition root apply and which import only what they patch.
 */
const LEAF_FOLDERS = ["settings/", "net/", "patches/"];
/** Relative specifiers of static imports, re-exports and dynamic imports. */
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g;

/** Every server source file (tests excluded) with the server files it imports. */
function importGraph(): Map<string, string[]> {
  const files = (readdirSync(SERVER, { recursive: true }) as string[])
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts") && !file.endsWith(".d.ts"))
    .map((file) => file.split("\\").join("/"));
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(join(SERVER, file), "utf8");
    const targets = [...text.matchAll(IMPORT)]
      .map((match) =>
        relative(SERVER, resolve(SERVER, dirname(file), match[1] ?? "")).replace(/\.js$/, ".ts"),
      )
      .filter((target) => known.has(target));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** Each import cycle once, as the files around it. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const onPath: string[] = [];
  const visit = (file: string) => {
    const at = onPath.indexOf(file);
    if (at >= 0) {
      cycles.push([...onPath.slice(at), file]);
      return;
    }
    if (done.has(file)) return;
    onPath.push(file);
    for (const target of graph.get(file) ?? []) visit(target);
    onPath.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return cycles;
}

describe("the import graph of server/", () => {
  const graph = importGraph();

  it("is read from the sources (the composition root reaches every layer)", () => {
    const fromApp = new Set((graph.get("app.ts") ?? []).map((target) => target.split("/")[0]));
    expect(fromApp).toContain("app");
    expect(graph.get("app/services-stage.ts")?.some((target) => target.startsWith("services/"))).toBe(true);
  });

  it("has no cycle between files", () => {
    expect(cyclesOf(graph).map((cycle) => cycle.join(" → "))).toEqual([]);
  });

  it("has leaf modules that import no layer", () => {
    const leaves = [
      ...LEAVES,
      ...[...graph.keys()].filter((file) => LEAF_FOLDERS.some((folder) => file.startsWith(folder))),
    ];
    expect(leaves).toContain("settings/aes-settings.ts");
    const violations = leaves.flatMap((leaf) =>
      (graph.get(leaf) ?? [])
        .filter((target) => LAYERS.includes(target.split("/")[0] ?? ""))
        .map((target) => `${leaf} → ${target}`),
    );
    expect(violations).toEqual([]);
  });

  it("has no layer importing a layer above it", () => {
    const tierOf = (file: string) => LAYER_TIER[file.split("/")[0] ?? ""];
    const upward = [...graph].flatMap(([file, targets]) =>
      targets
        .filter((target) => (tierOf(target) ?? 0) > (tierOf(file) ?? Number.POSITIVE_INFINITY))
        .map((target) => `${file} → ${target}`),
    );
    expect(upward).toEqual([]);
  });
});
