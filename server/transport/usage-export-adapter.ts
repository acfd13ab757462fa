import { pipeline } from "node:stream/promises";
import { fromJson } from "@bufbuild/protobuf";
import { TimestampSchema, timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { format } from "fast-csv";
import type { Authenticator } from "../services/iam/authenticator.js";
import {
  computeGranularUsage,
  type GranularUsageParams,
  type GranularUsageRecord,
} from "../services/tracing/granular-usage.js";
import type { Sql } from "../store/db.js";
import { type AdapterRoute, bindAdapter, type HttpAdapter } from "./http-adapter.js";
import { requestHeaders, requestTarget } from "./request-headers.js";
import { parseQuery } from "./rest/query-string.js";

/** The path of the CSV export; the same query parameters as the JSON API. */
export const USAGE_EXPORT_PATH = "/api/v1/orgs/current/billing/granular-usage/export";

/** The export's one route. */
export const USAGE_EXPORT_ROUTES = [
  { methods: ["GET"], path: USAGE_EXPORT_PATH },
] as const satisfies readonly AdapterRoute[];

/** The CSV columns, always all present and in this order; only those of the group_by are filled. */
export const USAGE_CSV_COLUMNS = [
  "Time Bucket Start",
  "Time Bucket End",
  "Workspace ID",
  "Workspace Name",
  "Project ID",
  "Project Name",
  "User ID",
  "User Email",
  "API Key Short Key",
  "Traces",
] as const;

/** Query parameters the export accepts; `workspace_ids` is the only repeatable one. */
const SINGLE_PARAMS = ["start_time", "end_time", "group_by", "aggregation"] as const;
const REPEATED_PARAM = "workspace_ids";

/** A cell starting with one of these is a formula to a spreadsheet: `=`, `+`, `-`, `@`, tab, CR. */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * `GET /api/v1/orgs/current/billing/granular-usage/export`: the granular usage as a CSV download,
 * computed by the same function as the JSON API, with the same validation and `{"detail"}` errors.
 */
export function createUsageExportAdapter({ sql, auth }: { sql: Sql; auth: Authenticator }): HttpAdapter {
  return bindAdapter(USAGE_EXPORT_ROUTES, {
    [USAGE_EXPORT_PATH]: async (req, res, { query }) => {
      const principal = await auth.authenticate(requestHeaders(req), requestTarget(req));
      const params = readParams(parseQuery(query));
      const { usage } = await computeGranularUsage(sql, principal, params);
      const filename = `granular-usage-${compact(params.startTime)}-${compact(params.endTime)}.csv`;
      res.writeHead(200, {
        "content-type": "text/csv; charset=utf-8",
        "content-disposition": `attachment; filename="${filename}"`,
        "cache-control": "no-store",
      });
      // The header line even when no trace matches: the seed's ten columns are always present.
      const csv = format({ headers: [...USAGE_CSV_COLUMNS], alwaysWriteHeaders: true, rowDelimiter: "\r\n" });
      const written = pipeline(csv, res);
      for (const record of usage) csv.write(csvRow(record));
      csv.end();
      try {
        await written;
      } catch {
        // The client went away mid-download: the response has started, so there is no one to tell.
        res.destroy();
      }
    },
  });
}

/** One CSV row of a record, every cell safe to open in a spreadsheet. */
export function csvRow(record: GranularUsageRecord): string[] {
  const d = record.dimensions;
  return [
    isoSeconds(record.timeBucket),
    isoSeconds(record.timeBucketEnd),
    d.workspace_id,
    d.workspace_name,
    d.project_id,
    d.project_name,
    d.user_id,
    d.user_email,
    d.api_key_short_key,
    String(record.traces),
  ].map((cell) => defuseFormula(cell ?? ""));
}

/** Prefixes a tab to a cell a spreadsheet would run as a formula. */
export function defuseFormula(cell: string): string {
  return FORMULA_START.test(cell) ? `\t${cell}` : cell;
}

/** RFC 3339 in UTC with whole seconds, as the JSON API writes timestamps. */
function isoSeconds(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A timestamp for a file name: 2026-01-05T00:00:00Z → 20260105T000000Z. */
function compact(at: Date | undefined): string {
  return at ? isoSeconds(at).replace(/[-:]/g, "") : "";
}

function readParams(query: readonly [string, string][]): GranularUsageParams {
  const invalid = (message: string) => new ConnectError(message, Code.InvalidArgument);
  const single = new Map<string, string>();
  const workspaceIds: string[] = [];
  for (const [name, value] of query) {
    if (name === REPEATED_PARAM) {
      workspaceIds.push(value);
    } else if ((SINGLE_PARAMS as readonly string[]).includes(name)) {
      if (single.has(name)) throw invalid(`query parameter "${name}" is given more than once`);
      single.set(name, value);
    } else {
      throw invalid(
        `unknown query parameter "${name}"; this endpoint accepts: ${[...SINGLE_PARAMS, REPEATED_PARAM].sort().join(", ")}`,
      );
    }
  }
  const time = (name: string): Date | undefined => {
    const raw = single.get(name);
    if (raw === undefined) return undefined;
    try {
      return timestampDate(fromJson(TimestampSchema, raw));
    } catch {
      throw invalid(
        `query parameter "${name}" must be an RFC 3339 timestamp such as "2024-01-31T12:00:00Z", got ${JSON.stringify(raw)}`,
      );
    }
  };
  return {
    startTime: time("start_time"),
    endTime: time("end_time"),
    workspaceIds,
    groupBy: single.get("group_by") ?? "",
    aggregation: single.get("aggregation") ?? "",
  };
}
