/**
 * One measured run of `bench:export`, in a process of its own so its memory is its own:
 *
 *   node --import tsx bench/export/export-child.ts '<json settings>'
 *
 * `export` runs the partition exporter (the code the export run job runs) from Postgres into S3;
 * `writer` reads the same rows from Postgres, a page at a time, but times only the Parquet writer, which
 * writes them to /dev/null (the ceiling: the same code path minus S3 and Postgres); `read` runs the
 * export's query alone, paged as the exporter pages it, with Node discarding the rows, then the same
 * query for the whole partition as `COPY (…) TO '/dev/null'`, where no client reads anything: the
 * Postgres floor, each figure from its backend's own CPU time. Prints one JSON line: rows, seconds,
 * bytes, peak RSS, and RSS after each file (every `fileMaxRows` rows).
 */
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import postgres from "postgres";
import { createParquetFileWriter } from "../../server/export/parquet-file-writer.js";
import {
  cursorOf,
  exportPartition,
  PAGE_ROWS,
  ROW_GROUP_ROWS,
} from "../../server/export/partition-exporter.js";
import { destinationPolicy } from "../../server/export/s3-destination.js";
import { loadZstdCompressor } from "../../server/export/zstd-compressor.js";
import { createSql } from "../../server/store/db.js";
import type { RunCursor } from "../../server/store/export/bulk-export-run-store.js";
import {
  EXPORTABLE_RUN_FIELDS,
  type ExportRow,
  type ExportRowQuery,
  exportRowLayout,
  readExportRows,
} from "../../server/store/export/run-export-store.js";

/** What the parent passes. */
export interface ChildSettings {
  mode: "export" | "writer" | "read";
  databaseUrl: string;
  workspaceId: string;
  sessionId: string;
  day: string;
  fileMaxRows: number;
  s3: { endpoint: string; region: string; bucket: string; accessKeyId: string; secretAccessKey: string };
}

/** What the child prints. */
export interface ChildResult {
  rows: number;
  seconds: number;
  /** CPU seconds of this process (all its threads) in the same span: contention on the machine does not inflate it. */
  cpuSeconds: number;
  bytes: number;
  /** The share of the time Node's event loop was busy (not waiting for Postgres, S3 or a stream). */
  eventLoopBusy: number;
  /** `read` only: Postgres CPU seconds of the paged query's backend, and of the COPY's. */
  floor?: { pagedCpuSeconds: number; copyCpuSeconds: number };
  peakRssMb: number;
  /**
   * Memory in MB after each file, with the rows written so far: RSS, the V8 heap in use, and
   * memory outside the heap (Buffers), so growth in RSS can be told apart by where it is.
   */
  rssAfterFile: { rows: number; rssMb: number; heapMb: number; externalMb: number }[];
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux everywhere we run). */
const CLOCK_TICKS = 100;

/** No byte bound: files are cut by rows, the same in both modes. */
const NO_BYTE_BOUND = Number.MAX_SAFE_INTEGER;

const settings = JSON.parse(process.argv[2] ?? "{}") as ChildSettings;
const sql = createSql(settings.databaseUrl, {
  max: 4,
  statementTimeoutMs: 0,
  applicationName: "bench-export",
});
const zstd = await loadZstdCompressor();
const day = new Date(settings.day);
const layout = exportRowLayout(EXPORTABLE_RUN_FIELDS);
const end = new Date(day.getTime() + 24 * 60 * 60 * 1000);
/** The partition's page of at most `limit` rows after `after`, as the bench's readers ask for it. */
const pageQuery = (after: RunCursor | null, limit: number): ExportRowQuery => ({
  workspaceId: settings.workspaceId,
  sessionId: settings.sessionId,
  from: day,
  to: end,
  condition: undefined,
  after,
  limit,
  fields: EXPORTABLE_RUN_FIELDS,
});
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
const rssAfterFile: ChildResult["rssAfterFile"] = [];
/** Memory now, with the rows written so far. */
const memoryAt = (rowsSoFar: number) => {
  const m = process.memoryUsage();
  return { rows: rowsSoFar, rssMb: mb(m.rss), heapMb: mb(m.heapUsed), externalMb: mb(m.external) };
};
let rows = 0;
let bytes = 0;
let seconds = 0;
let cpuSeconds = 0;
/** CPU seconds since `from` (a process.cpuUsage() reading). */
const cpuSince = (from: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1e6;
};

const loopBefore = performance.eventLoopUtilization();
/** The event loop's use over the measured span (for `read`, its reads only, not the COPY after them). */
let loop: ReturnType<typeof performance.eventLoopUtilization> | undefined;
let floor: ChildResult["floor"];
/** The query of the partition's first page, as the exporter sends it, and its parameters. */
let firstQuery: { text: string; parameters: unknown[] } | undefined;

if (settings.mode === "export") {
  const started = performance.now();
  const cpu = process.cpuUsage();
  await exportPartition(
    sql,
    {
      workspaceId: settings.workspaceId,
      exportId: "00000000-0000-7000-8000-00000000be01",
      runId: "00000000-0000-7000-8000-00000000be02",
      sessionId: settings.sessionId,
      start: day,
      end,
      condition: undefined,
      fields: EXPORTABLE_RUN_FIELDS,
      formatVersion: "v2_beta",
      target: {
        location: {
          bucketName: settings.s3.bucket,
          prefix: "bench",
          region: settings.s3.region,
          endpointUrl: settings.s3.endpoint,
          includeBucketInPrefix: false,
        },
        credentials: { accessKeyId: settings.s3.accessKeyId, secretAccessKey: settings.s3.secretAccessKey },
        // s3rver listens on loopback.
        policy: destinationPolicy(true),
      },
      cursor: null,
      files: [],
      retried: false,
    },
    { fileMaxRows: settings.fileMaxRows, fileMaxBytes: NO_BYTE_BOUND },
    zstd,
    {
      signal: new AbortController().signal,
      async checkpoint(file) {
        rows += file.rows;
        bytes += file.bytes;
        rssAfterFile.push(memoryAt(rows));
      },
    },
  );
  seconds = (performance.now() - started) / 1000;
  cpuSeconds = cpuSince(cpu);
} else if (settings.mode === "read") {
  // One connection, so one backend does all the work and its CPU time is the query's.
  const reader = postgres(settings.databaseUrl, {
    max: 1,
    onnotice: () => {},
    connection: { application_name: "bench-export" },
    debug: (_connection, text, parameters) => {
      if (text.includes("from runs as run")) firstQuery ??= { text, parameters };
    },
  });
  // A parallel plan would put part of the work in other processes.
  await reader`set max_parallel_workers_per_gather = 0`;
  const backendCpu = await backendCpuReader(reader);
  const started = performance.now();
  const cpu = process.cpuUsage();
  const pgBefore = await backendCpu();
  let cursor: RunCursor | null = null;
  for (;;) {
    let last: ExportRow | undefined;
    const page = await readExportRows(reader, pageQuery(cursor, PAGE_ROWS), (row) => {
      last = row;
    });
    rows += page;
    if (last) cursor = cursorOf(last, layout);
    if (page < PAGE_ROWS) break;
  }
  const pagedCpuSeconds = (await backendCpu()) - pgBefore;
  seconds = (performance.now() - started) / 1000;
  cpuSeconds = cpuSince(cpu);
  loop = performance.eventLoopUtilization(loopBefore);
  if (!firstQuery) throw new Error("the export query was not seen");
  const copyBefore = await backendCpu();
  await reader.unsafe(`copy (${inlined(firstQuery, rows)}) to '/dev/null'`);
  floor = { pagedCpuSeconds, copyCpuSeconds: (await backendCpu()) - copyBefore };
  await reader.end();
} else {
  let cursor: RunCursor | null = null;
  for (;;) {
    let writer: ReturnType<typeof createParquetFileWriter> | undefined;
    let fileRows = 0;
    let exhausted = false;
    while (fileRows < settings.fileMaxRows) {
      // Held as a page here (the exporter streams rows instead) so only the writer is timed.
      const page: ExportRow[] = [];
      await readExportRows(
        sql,
        pageQuery(cursor, Math.min(PAGE_ROWS, settings.fileMaxRows - fileRows)),
        (row) => page.push(row),
      );
      if (page.length === 0) {
        exhausted = true;
        break;
      }
      const timed = performance.now();
      const cpu = process.cpuUsage();
      writer ??= createParquetFileWriter({
        out: createWriteStream("/dev/null"),
        fields: EXPORTABLE_RUN_FIELDS,
        zstd,
        rowGroupRows: Math.min(ROW_GROUP_ROWS, settings.fileMaxRows),
      });
      for (const row of page) writer.append(row);
      await writer.drained();
      seconds += (performance.now() - timed) / 1000;
      cpuSeconds += cpuSince(cpu);
      fileRows += page.length;
      cursor = cursorOf(page[page.length - 1] as (typeof page)[number], layout);
    }
    if (writer) {
      const timed = performance.now();
      const cpu = process.cpuUsage();
      const file = await writer.finish();
      seconds += (performance.now() - timed) / 1000;
      cpuSeconds += cpuSince(cpu);
      rows += file.rows;
      bytes += file.bytes;
      rssAfterFile.push(memoryAt(rows));
    }
    if (exhausted || !writer) break;
  }
}

await sql.end();
const result: ChildResult = {
  rows,
  seconds,
  cpuSeconds,
  bytes,
  eventLoopBusy: (loop ?? performance.eventLoopUtilization(loopBefore)).utilization,
  floor,
  peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
  rssAfterFile,
};
process.stdout.write(`${JSON.stringify(result)}\n`);

/** Reads the CPU seconds (user and system) of the backend serving `reader`'s one connection. */
async function backendCpuReader(reader: postgres.Sql): Promise<() => Promise<number>> {
  const [backend] = await reader<{ pid: number }[]>`select pg_backend_pid() as pid`;
  return async () => {
    const stat = await readFile(`/proc/${backend?.pid}/stat`, "utf8");
    const [user = 0, system = 0] = stat
      .slice(stat.lastIndexOf(")") + 2)
      .split(" ")
      .slice(11, 13)
      .map(Number);
    return (user + system) / CLOCK_TICKS;
  };
}

/**
 * The first page's query as one statement of text: its parameters (as the driver serialised them)
 * written in as literals, since COPY takes none, and its row limit raised to the whole partition.
 */
function inlined(query: { text: string; parameters: unknown[] }, limit: number): string {
  const limitParameter = /limit \$(\d+)\s*$/.exec(query.text)?.[1];
  if (!limitParameter) throw new Error("the export query has no row limit at its end");
  return query.text.replace(/\$(\d+)/g, (_, n: string) =>
    n === limitParameter
      ? String(limit)
      : `'${String(query.parameters[Number(n) - 1]).replaceAll("'", "''")}'`,
  );
}
