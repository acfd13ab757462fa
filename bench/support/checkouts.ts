import { existsSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { REPO_ROOT } from "./bench-app.js";

/** A checkout of agentplane a bench runs: this one, or a baseline beside it. */
export interface Checkout {
  /** How the report names it: `agentplane` for this checkout, the folder's name for a baseline. */
  label: string;
  /** Its root folder. */
  root: string;
}

/** This checkout. */
export const THIS_CHECKOUT: Checkout = { label: "agentplane", root: REPO_ROOT };

/**
 * The `parseArgs` option `--baseline <dir>` (repeatable): another checkout of agentplane, such as
 * an older commit, measured side by side with this one in the same run. Make one with
 *
 *   mkdir /tmp/ap-6ff56f1 && git archive 6ff56f1 | tar -x -C /tmp/ap-6ff56f1
 *   cp -al node_modules /tmp/ap-6ff56f1/   # hard links: no copy of the bytes
 */
export const BASELINE_OPTION = { baseline: { type: "string", multiple: true } } as const;

/**
 * The checkouts named by `--baseline`, checked to hold a server and its node_modules, each labelled
 * by its folder's name; throws naming the folder otherwise.
 */
export function baselineCheckouts(dirs: readonly string[] = []): Checkout[] {
  const checkouts = dirs.map((dir) => ({ label: basename(resolve(dir)), root: resolve(dir) }));
  for (const { root } of checkouts) {
    for (const needed of ["server/app.ts", "node_modules/tsx"])
      if (!existsSync(join(root, needed)))
        throw new Error(`--baseline ${root}: no ${needed} there; see bench/support/checkouts.ts to make one`);
  }
  const labels = [THIS_CHECKOUT, ...checkouts].map((c) => c.label);
  const twice = labels.find((label, i) => labels.indexOf(label) !== i);
  if (twice)
    throw new Error(`--baseline: two checkouts are named ${twice}; give them folders of distinct names`);
  return checkouts;
}
