import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { SystemService } from "../../../gen/agentplane/system/v1/system_service_pb.js";
import type { AuthMode, ProcessRole } from "../../config.js";
import type { DependencyMonitor, DependencyStatus } from "./dependency-monitor.js";

/** Dependencies of {@link createSystemService}. */
export interface SystemServiceDeps {
  monitor: Pick<DependencyMonitor, "status" | "probe">;
  version: string;
  role: ProcessRole;
  auth: AuthMode;
  /** Whether traces are counted into granular usage (AGENTPLANE_USAGE_REPORTING). */
  usageReporting: boolean;
}

/** SystemService: liveness/readiness (`/ok`) and server information (`/info`). */
export function createSystemService({
  monitor,
  version,
  role,
  auth,
  usageReporting,
}: SystemServiceDeps): ServiceImpl<typeof SystemService> {
  return {
    async ok(request) {
      const status = request.checkDb ? await monitor.probe() : monitor.status();
      const problem = describeOutage(status);
      if (problem) throw new ConnectError(problem, Code.Unavailable);
      return { ok: true, services: { postgres: "ok", queue: "ok", workers: "ok" } };
    },
    getInfo() {
      // Worker processes serve no product API, only system endpoints.
      const api = role !== "worker";
      return {
        version,
        role,
        flags: {
          assistants: api,
          crons: api,
          tracing: api,
          usageReporting: api && usageReporting,
          bulkExport: false,
          auth: auth === "apikey",
          strictResume: api,
          streamNamespaces: api,
        },
      };
    },
  };
}

/** A sentence naming every dependency that is down, or undefined when everything is up. */
function describeOutage(status: DependencyStatus): string | undefined {
  const down = [
    status.postgres ? undefined : "postgres is unreachable",
    status.queue ? undefined : "the job queue is unavailable",
    status.workers
      ? undefined
      : "a job worker loop of this process is stuck (agentplane_queue_worker_up in /metrics names it)",
  ].filter((problem) => problem !== undefined);
  return down.length === 0 ? undefined : down.join("; ");
}
