import { readdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { DescService } from "@bufbuild/protobuf";
import { REST_ADAPTERS } from "../../../server/service-registry.js";
import { createRouteTable, type Route } from "../../../server/transport/rest/route-table.js";
import { LOG_LEVEL_ROUTES, METRICS_ROUTES } from "../../../server/transport/system-adapter.js";

/** The generated code of every proto service the server may serve. */
const GEN_DIR = fileURLToPath(new URL("../../../gen/", import.meta.url));

/**
 * Every REST route of every service in gen/, from their google.api.http options: the routes the
 * server answers today and any added later, without a list to keep up to date.
 */
export async function rpcRoutes(): Promise<readonly Route[]> {
  const files = (await readdir(GEN_DIR, { recursive: true })).filter((file) => file.endsWith("_pb.ts"));
  const services: DescService[] = [];
  for (const file of files.sort()) {
    const module = (await import(new URL(file, `file://${GEN_DIR}`).href)) as Record<string, unknown>;
    for (const value of Object.values(module)) {
      if ((value as DescService | undefined)?.kind === "service") services.push(value as DescService);
    }
  }
  return createRouteTable(services).routes;
}

/** A REST-only route: one of its methods and its path template. */
export interface AdapterRouteUnderTest {
  readonly method: string;
  readonly path: string;
}

/**
 * Every route of the server's REST-only adapters (trace ingest, CSV export, pages), from their list,
 * and `/metrics`. Not the heap dump: every probe it accepted would write a snapshot of the heap.
 */
export function adapterRoutes(): readonly AdapterRouteUnderTest[] {
  return [...REST_ADAPTERS.map((adapter) => adapter.routes), METRICS_ROUTES, LOG_LEVEL_ROUTES].flatMap(
    (routes) => routes.flatMap((route) => route.methods.map((method) => ({ method, path: route.path }))),
  );
}
