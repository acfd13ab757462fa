import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  type HealthCheckRequest,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";

/** The grpc.health.v1 serving statuses, re-exported so that callers need not import gen/. */
export { ServingStatus };

/** The health entry of the server as a whole, as the gRPC health protocol names it. */
export const OVERALL_HEALTH = "";

/** Called after a status changed, with the service whose status it was. */
export type HealthListener = (service: string, status: ServingStatus) => void;

/**
 * The serving status of the server (entry `""`) and of each service it serves, by fully-qualified
 * service name. The Health service answers from it; a monitor of Postgres and the queue writes it.
 */
export interface HealthRegistry {
  /** The status of `service`, or `undefined` when the service is not known. */
  get(service: string): ServingStatus | undefined;
  /** Sets one entry (adding it when new) and notifies subscribers when the status changed. */
  set(service: string, status: ServingStatus): void;
  /** Sets the overall entry and every service entry at once, e.g. NOT_SERVING while Postgres is down. */
  setAll(status: ServingStatus): void;
  /** A snapshot of every entry. */
  entries(): ReadonlyMap<string, ServingStatus>;
  /** Calls `listener` after each change; returns the function that unsubscribes it. */
  subscribe(listener: HealthListener): () => void;
}

/**
 * Creates a health registry with the overall entry and one entry per given service name, all set to
 * `initial` (SERVING unless given).
 */
export function createHealthRegistry(
  services: Iterable<string>,
  initial: ServingStatus = ServingStatus.SERVING,
): HealthRegistry {
  const statuses = new Map<string, ServingStatus>([[OVERALL_HEALTH, initial]]);
  for (const service of services) statuses.set(service, initial);
  const listeners = new Set<HealthListener>();

  const set = (service: string, status: ServingStatus): void => {
    if (statuses.get(service) === status) return;
    statuses.set(service, status);
    for (const listener of [...listeners]) listener(service, status);
  };

  return {
    get: (service) => statuses.get(service),
    set,
    setAll(status) {
      for (const service of [...statuses.keys()]) set(service, status);
    },
    entries: () => new Map(statuses),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/**
 * The grpc.health.v1.Health implementation over `registry`. Check and List answer from the registry
 * (Check on an unknown service fails with NOT_FOUND); Watch sends the current status at once, then
 * each change (SERVICE_UNKNOWN while the service is not known, without ending the call), until the
 * call's signal aborts (client gone, deadline, or server shutdown), whose reason ends the call.
 */
export function createHealthService(registry: HealthRegistry): ServiceImpl<typeof Health> {
  return {
    check(request) {
      const status = registry.get(request.service);
      if (status === undefined) {
        throw new ConnectError(`unknown service "${request.service}"`, Code.NotFound);
      }
      return { status };
    },
    list() {
      const statuses: Record<string, { status: ServingStatus }> = {};
      for (const [service, status] of registry.entries()) statuses[service] = { status };
      return { statuses };
    },
    watch: (request, ctx) => watchStatus(registry, request, ctx),
  };
}

async function* watchStatus(registry: HealthRegistry, request: HealthCheckRequest, ctx: HandlerContext) {
  let changed = false;
  let wake: (() => void) | undefined;
  const unsubscribe = registry.subscribe((service) => {
    if (service !== request.service) return;
    changed = true;
    wake?.();
  });
  const onAbort = () => wake?.();
  ctx.signal.addEventListener("abort", onAbort);
  try {
    let sent: ServingStatus | undefined;
    while (!ctx.signal.aborted) {
      changed = false;
      const status = registry.get(request.service) ?? ServingStatus.SERVICE_UNKNOWN;
      // Changes are coalesced: a watcher sees the latest status, as grpc-go's server does.
      if (status !== sent) {
        sent = status;
        yield { status };
      }
      if (!changed && !ctx.signal.aborted) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
      wake = undefined;
    }
    // Ends the call with the reason: UNAVAILABLE at server shutdown, DEADLINE_EXCEEDED at a deadline.
    ctx.signal.throwIfAborted();
  } finally {
    unsubscribe();
    ctx.signal.removeEventListener("abort", onAbort);
  }
}
