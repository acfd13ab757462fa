import type { AddressInfo } from "node:net";
import { ThreadStreamService } from "../../gen/agentplane/agents/v1/thread_stream_service_pb.js";
import { SystemService } from "../../gen/agentplane/system/v1/system_service_pb.js";
import type { Config } from "../config.js";
import { type Logger, writesAt } from "../logger.js";
import { createRequestLoopback, loopbackUrl } from "../runtime/loopback-client.js";
import { createRestAdapters, REST_ADAPTERS } from "../service-registry.js";
import { createHeapDumper } from "../services/system/heap-dump.js";
import { createLogLevelControl } from "../services/system/log-level-control.js";
import { scopedHandler, withEncryptionScope } from "../store/crypto/encryption-scope.js";
import { createCustomAppMount } from "../transport/custom-app/custom-app-handler.js";
import { createCustomRouteAuth } from "../transport/custom-app/custom-route-auth.js";
import { createDocsAdapter } from "../transport/docs/docs-adapter.js";
import { gateAdapter } from "../transport/gated-adapter.js";
import { servedAdapters, servedServices } from "../transport/graphs-file-http.js";
import { createHttpHandler } from "../transport/http-handler.js";
import { createOnePortServer } from "../transport/one-port-server.js";
import { corsAllows } from "../transport/rest/cors.js";
import {
  createHeapDumpAdapter,
  createLogLevelAdapter,
  createMetricsAdapter,
  HEAP_DUMP_ROUTES,
  LOG_LEVEL_ROUTES,
  METRICS_ROUTES,
} from "../transport/system-adapter.js";
import { createThreadStreamSockets } from "../transport/ws/thread-stream-socket.js";
import type { Database } from "./database-stage.js";
import type { Jobs } from "./jobs-stage.js";
import type { ProcessUrls } from "./process-urls.js";
import { explainStoreError, type Services } from "./services-stage.js";
import type { ShutdownSteps } from "./shutdown-steps.js";
import type { UserCode } from "./user-code-stage.js";

/**
 * Stage 6: the one-port server (RPCs, REST adapters, docs, metrics, thread stream sockets, the
 * custom app), listening; then the process's own URL is known to its loopback clients.
 */
export async function startTransport(inputs: {
  config: Config;
  log: Logger;
  database: Database;
  userCode: UserCode;
  jobs: Jobs;
  services: Services;
  urls: ProcessUrls;
  steps: ShutdownSteps;
}): Promise<AddressInfo> {
  const { config, log, urls } = inputs;
  const { sql, gate } = inputs.database;
  const { http, cors, customEncryption, userApp } = inputs.userCode;
  const { metrics, ignoredFields } = inputs.jobs;
  const { services, health, auth, version, deps } = inputs.services;
  const shutdown = new AbortController();
  const threadStream = services.find((bound) => bound.service.typeName === ThreadStreamService.typeName);
  const sockets = threadStream
    ? createThreadStreamSockets({
        service: threadStream,
        originAllowed: corsAllows(cors),
        inRequestScope: customEncryption !== undefined ? withEncryptionScope : (fn) => fn(),
        log,
        ...(http.mountPrefix ? { mountPrefix: http.mountPrefix } : {}),
      })
    : undefined;
  const server = createOnePortServer(
    withEncryptionScopes(
      customEncryption !== undefined,
      createHttpHandler({
        services: servedServices(services, http),
        health,
        shutdownSignal: shutdown.signal,
        adapters: servedAdapters(
          [
            createMetricsAdapter(metrics),
            ...[
              createHeapDumpAdapter({
                heapDumper: createHeapDumper({ sql, dataDir: config.dataDir }),
                auth,
              }),
              createLogLevelAdapter({ control: createLogLevelControl({ sql, log }), auth }),
              ...(config.role === "worker" ? [] : createRestAdapters(deps, auth)),
            ].map((adapter) => gateAdapter(adapter, gate, explainStoreError)),
            ...(config.role === "worker"
              ? []
              : [
                  createDocsAdapter({
                    services: services.map((bound) => bound.service),
                    publicServices: new Set([SystemService.typeName]),
                    adapterRoutes: [
                      ...REST_ADAPTERS.flatMap((adapter) => (adapter.undocumented ? [] : adapter.routes)),
                      ...METRICS_ROUTES,
                      ...HEAP_DUMP_ROUTES,
                      ...LOG_LEVEL_ROUTES,
                    ],
                    version,
                  }),
                ]),
          ],
          http,
        ),
        log,
        onRequest: (sample) => metrics.recordHttpRequest(sample),
        onIgnoredFields: ignoredFields,
        cors,
        // A logger with a changeable level is asked per request; a fixed one is the configured level.
        accessLog: log.level !== undefined || writesAt(config.logLevel, "info"),
        ...(http.mountPrefix ? { mountPrefix: http.mountPrefix } : {}),
        ...(userApp
          ? {
              customApp: await createCustomAppMount({
                app: userApp,
                order: http.middlewareOrder ?? "middleware_first",
                enableCustomRouteAuth: http.enableCustomRouteAuth ?? false,
                authenticate: createCustomRouteAuth(auth),
                log,
                aroundRequest: createRequestLoopback(urls.own).around,
              }),
            }
          : {}),
      }),
    ),
    {
      shutdown,
      ...(sockets ? { onUpgrade: sockets.handleUpgrade, onClose: sockets.close } : {}),
    },
  );
  const address = await server.listen(config.port, config.host);
  urls.listening(loopbackUrl(address) + (http.mountPrefix ?? ""));
  inputs.steps.onStop("server", () => server.close(config.shutdownGraceMs));
  log.info("agentplane is listening", { host: address.address, port: address.port, role: config.role });
  return address;
}

/** The request handler, each request in its own encryption scope when custom encryption is on. */
function withEncryptionScopes<A extends unknown[]>(on: boolean, handler: (...args: A) => void) {
  return on ? scopedHandler(handler) : handler;
}
