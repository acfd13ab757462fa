import type postgres from "postgres";
import { currentEncryptionContext, type EncryptionContextValue } from "../crypto/encryption-scope.js";

/**
 * The encryption context of the JSON documents handed to queries, by document. The driver
 * serializes a query's parameters when it sends them, which is often not in the caller's async
 * context: a query waiting for a free connection is sent from another connection's socket callback,
 * and a statement new to its connection is bound when Postgres answers its Describe. So the context
 * is taken when the query is issued, which always happens in the caller's context, and pinned to
 * each document it carries; the JSON serializer looks it up here ({@link contextOfDocument}).
 */
const documentContexts = new WeakMap<object, EncryptionContextValue | null>();
/**
 * The context of documents submitted to a coalescer (store/batching/coalescer.ts), which sends the items of
 * many callers as one batch from whichever caller's turn flushes it: the submitter's context wins
 * over the flusher's.
 */
const submittedContexts = new WeakMap<object, EncryptionContextValue | null>();

/** The context `document` was submitted or issued with; undefined when neither happened. */
export function contextOfDocument(document: object): EncryptionContextValue | null | undefined {
  const submitted = submittedContexts.get(document);
  return submitted !== undefined ? submitted : documentContexts.get(document);
}

/**
 * Pins the current encryption context to a coalesced item's documents (its object-valued fields);
 * nothing unless custom encryption is on.
 */
export function pinSubmittedContext(item: unknown): void {
  if (!installed || typeof item !== "object" || item === null) return;
  const context = currentEncryptionContext() ?? null;
  for (const value of Object.values(item as Record<string, unknown>))
    if (typeof value === "object" && value !== null && !ArrayBuffer.isView(value) && !(value instanceof Date))
      submittedContexts.set(value, context);
}

/** What a query object of porsager `postgres` holds, as far as tagging reads it. */
interface QueryShape {
  args: unknown[];
  handle(): unknown;
}

/** The driver's classes, read off one pool: its package exports no way to name them. */
interface DriverClasses {
  queryPrototype: QueryShape;
  parameter: abstract new (...args: never[]) => { value: unknown };
  builder: abstract new (...args: never[]) => { first: unknown };
}

/** Whether the driver's Query prototype is already patched (it is shared by every pool). */
let installed = false;

/**
 * Pins the current encryption context to every JSON document of each query issued on any pool
 * (once per process; `sql` is only used to find the driver's classes).
 */
export function installQueryContextTags(sql: postgres.Sql): void {
  if (installed) return;
  installed = true;
  const classes: DriverClasses = {
    // Unexecuted: a query runs only once awaited.
    queryPrototype: Object.getPrototypeOf(sql`select 1`) as QueryShape,
    parameter: sql.json({}).constructor as DriverClasses["parameter"],
    builder: (sql({ a: 1 }) as object).constructor as DriverClasses["builder"],
  };
  const handle = classes.queryPrototype.handle;
  classes.queryPrototype.handle = function (this: QueryShape) {
    tagArgs(this.args, currentEncryptionContext() ?? null, classes, classes.queryPrototype);
    return handle.call(this);
  };
}

/** Tags the documents among a query's arguments, its fragments' and its helpers'. */
function tagArgs(
  args: unknown[],
  context: EncryptionContextValue | null,
  classes: DriverClasses,
  queryPrototype: QueryShape,
): void {
  for (const arg of args) {
    if (typeof arg !== "object" || arg === null) continue;
    if (Object.getPrototypeOf(arg) === queryPrototype)
      tagArgs((arg as QueryShape).args, context, classes, queryPrototype);
    else if (arg instanceof classes.parameter) tag(arg.value, context);
    else if (arg instanceof classes.builder) tagBuilder(arg.first, context);
    else if (Array.isArray(arg) && isQuery(arg[0], queryPrototype))
      tagArgs(arg, context, classes, queryPrototype);
    else tag(arg, context);
  }
}

function isQuery(value: unknown, queryPrototype: QueryShape): value is QueryShape {
  return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === queryPrototype;
}

/** Tags the column values of an insert/update helper's row or rows (`sql(rows)`). */
function tagBuilder(first: unknown, context: EncryptionContextValue | null): void {
  const rows = Array.isArray(first) ? first : [first];
  for (const row of rows)
    if (typeof row === "object" && row !== null)
      for (const value of Object.values(row as Record<string, unknown>)) tag(value, context);
}

function tag(value: unknown, context: EncryptionContextValue | null): void {
  if (typeof value === "object" && value !== null && !ArrayBuffer.isView(value) && !(value instanceof Date))
    documentContexts.set(value, context);
}
