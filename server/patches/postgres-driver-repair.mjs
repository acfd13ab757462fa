/**
 * Repairs a crash in the postgres.js driver (3.4.9, the latest release): a repair of the driver's
 * files on disk (its fixes are inside closures no runtime patch can reach), run by `npm install` as
 * this package's postinstall step (`node server/patches/postgres-driver-repair.mjs`), and checked at
 * start-up by {@link postgresDriverRepairState} (server/patches/dependency-patches.ts), which stops
 * the server when an install skipped it (`npm install --ignore-scripts`).
 *
 * The driver defers small writes to a `setImmediate` and, when the connection's socket closes,
 * clears that timer without forgetting it. When Postgres drops connections (a crash, a restart,
 * `pg_terminate_backend`), a write scheduled after the close runs on a null
 * socket and throws from the immediate, which no caller can catch, so the whole server exits
 * (upstream porsager/postgres#1154, #1208); and a connection whose timer was cleared never
 * schedules a write again. Releasing a reserved connection whose backend died puts it back among
 * the open ones, where every later query fails (porsager/postgres#1199). A query sent after a
 * socket error but before its close is never answered, and the pool's end() then waits for it
 * forever. The repair fails a write whose socket is gone with CONNECTION_CLOSED
 * (rejecting the queries waiting on it, as a close does) and resets the write buffer and timer
 * whenever the connection closes or terminates, fails every query still pending when the socket
 * closes, and leaves a released closed connection closed, so that the pool reconnects
 * it when it is next needed.
 *
 * Idempotent. It fails the install when the driver's code no longer reads as expected, so that a
 * driver upgrade is checked against this repair instead of silently losing it.
 */
import { realpathSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Marks a file this script already repaired. */
const MARKER = "/* agentplane: write-after-close repair */";

/** Each piece of the driver's connection code and what replaces it. */
const CONNECTION_REPAIRS = [
  {
    what: "nextWrite on a closed socket",
    from: "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)",
    to: `  function nextWrite(fn) {\n    ${MARKER}\n    if (socket === null) {\n      chunk = nextWriteTimer = null\n      error(Errors.connection('CONNECTION_CLOSED', options))\n      query = null\n      return false\n    }\n    const x = socket.write(chunk, fn)`,
  },
  {
    what: "the write timer left armed by terminate()",
    from: "    terminated = true\n    if (stream || query || initial || sent.length)\n      error(Errors.connection('CONNECTION_DESTROYED', options))\n\n    clearImmediate(nextWriteTimer)\n",
    to: "    terminated = true\n    if (stream || query || initial || sent.length)\n      error(Errors.connection('CONNECTION_DESTROYED', options))\n\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n",
  },
  {
    what: "queries sent between a socket error and its close, left pending by closed()",
    from: "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n",
    to: "    ;(query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n    query = null\n",
  },
  {
    what: "the write timer left armed by closed()",
    from: "    incomings = null\n    clearImmediate(nextWriteTimer)\n",
    to: "    incomings = null\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n",
  },
];

/** The pool's: a reserved connection released after its backend died stays closed, not open. */
const POOL_REPAIRS = [
  {
    what: "release() of a closed reserved connection",
    from: "    sql.release = () => {\n      c.reserved = null\n      onopen(c)\n    }",
    to: `    sql.release = () => {\n      ${MARKER}\n      c.reserved = null\n      c.queue === closed || onopen(c)\n    }`,
  },
];

const require = createRequire(import.meta.url);

/**
 * Where the driver is installed: the package exports no package.json, and its CommonJS entry is
 * cjs/src/index.js under the root.
 */
const INSTALLED_ROOT = join(dirname(require.resolve("postgres")), "..", "..");

/** The driver's files this repair edits, each with its repairs, and the driver's version. */
async function driverFiles(root) {
  const version = JSON.parse(await readFile(join(root, "package.json"), "utf8")).version;
  const files = ["src", join("cjs", "src")].flatMap((dir) => [
    { file: join(root, dir, "connection.js"), repairs: CONNECTION_REPAIRS },
    { file: join(root, dir, "index.js"), repairs: POOL_REPAIRS },
  ]);
  return { version, files };
}

/**
 * Which of the driver's files lack the repair: an empty list when every file is repaired.
 * @param {string} [root] the driver's package folder; the installed one by default
 * @returns {Promise<{ version: string, unrepaired: string[] }>}
 */
export async function postgresDriverRepairState(root = INSTALLED_ROOT) {
  const { version, files } = await driverFiles(root);
  const unrepaired = [];
  for (const { file } of files) if (!(await readFile(file, "utf8")).includes(MARKER)) unrepaired.push(file);
  return { version, unrepaired };
}

/**
 * Repairs every driver file not yet repaired; throws, naming the repair, when the driver's code no
 * longer reads as this repair expects.
 * @param {string} [root] the driver's package folder; the installed one by default
 * @returns {Promise<void>}
 */
export async function repairPostgresDriver(root = INSTALLED_ROOT) {
  const { version, files } = await driverFiles(root);
  for (const { file, repairs } of files) {
    let code = await readFile(file, "utf8");
    if (code.includes(MARKER)) continue;
    for (const repair of repairs) {
      if (code.split(repair.from).length !== 2)
        throw new Error(
          `postgres ${version}: ${file} no longer has the code this repair expects (${repair.what}); ` +
            "check whether the driver fixed the write-after-close crash and update server/patches/postgres-driver-repair.mjs",
        );
      code = code.replace(repair.from, repair.to);
    }
    await writeFile(file, code);
  }
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    await repairPostgresDriver();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}
