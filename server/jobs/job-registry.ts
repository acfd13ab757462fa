import type { Sql } from "../store/db.js";
import type { JobDefinition } from "./job-definition.js";
import { createWorkspacePurgeJob } from "./workspace-purge-job.js";

/** Every job of the product, with its handler bound to its dependencies. */
export interface JobRegistry {
  /** Deletes a workspace marked deleted. */
  readonly workspacePurge: ReturnType<typeof createWorkspacePurgeJob>;
}

/** Builds the registry; the one place a new job type is added. */
export function createJobRegistry(deps: { sql: Sql }): JobRegistry {
  return { workspacePurge: createWorkspacePurgeJob(deps.sql) };
}

/** The registry as the list the queue creates queues and workers for. */
export function allJobs(registry: JobRegistry): JobDefinition[] {
  return Object.values(registry) as JobDefinition[];
}
