import type { NormalizedRun } from "./trace-rows.js";

/** A run ready to be written: normalised, with its project resolved to an id. */
export type RunRow = Omit<NormalizedRun, "project" | "positioned"> & { projectId: string };
