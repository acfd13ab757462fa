import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startEmbeddedPostgres } from "./embedded-postgres.js";

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const MODULE = fileURLToPath(new URL("./embedded-postgres.ts", import.meta.url));
/** Poll interval while waiting for killed processes to disappear. */
const POLL_MS = 20;

/** Runs one query on a fresh connection. */
async function query<T extends postgres.MaybeRow[]>(
  url: string,
  run: (sql: postgres.Sql) => Promise<T>,
): Promise<T> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return await run(sql);
  } finally {
    await sql.end();
  }
}

/** The pid of a cluster's postmaster, from its lock file. */
async function postmasterPid(dataDir: string): Promise<number> {
  return Number((await readFile(join(dataDir, "postmaster.pid"), "utf8")).split("\n", 1)[0]);
}

/** Pids of the live (non-zombie) children of a process. */
async function childrenOf(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const line = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const fields = line.slice(line.lastIndexOf(")") + 2).split(" ");
    if (fields[0] !== "Z" && Number(fields[1]) === pid) children.push(Number(entry));
  }
  return children;
}

/** Resolves once none of the processes is alive (a zombie counts as gone). */
async function waitUntilGone(pids: number[]): Promise<void> {
  for (;;) {
    const states = await Promise.all(pids.map((p) => readFile(`/proc/${p}/stat`, "utf8").catch(() => "")));
    if (states.every((s) => s === "" || s.charAt(s.lastIndexOf(")") + 2) === "Z")) return;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Runs an ES module script in a child Node with this module loaded; resolves to its output and exit code. */
async function runWithModule(
  script: string,
  signal?: NodeJS.Signals,
): Promise<{ code: number | null; out: string }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "-e", `await import(${JSON.stringify(MODULE)});\n${script}`],
    { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    if (signal && out.includes("ready")) child.kill(signal);
  });
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, out };
}

describe("loading embedded-postgres", () => {
  it("keeps the exit code the process sets (a failing test run must not exit 0)", async () => {
    expect(await runWithModule("process.exitCode = 3;")).toEqual({ code: 3, out: "" });
  });

  it("leaves SIGTERM to the application's own graceful shutdown", async () => {
    const script = `
      process.on("SIGTERM", () => setTimeout(() => { console.log("drained"); process.exit(7); }, 200));
      console.log("ready");
      setInterval(() => {}, 60_000);`;
    expect(await runWithModule(script, "SIGTERM")).toEqual({ code: 7, out: "ready\ndrained\n" });
  });
});

describe("startEmbeddedPostgres", () => {
  let root: string;
  let dataDir: string;
  const log: string[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "agentplane-embedded-"));
    // mkdtemp makes the directory 0700; as root, Postgres runs as the `postgres` user and must enter it.
    await chmod(root, 0o711);
    dataDir = join(root, "data", "postgres");
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("keeps data and the password across a restart, and stops cleanly", async () => {
    const first = await startEmbeddedPostgres({ dataDir, log: (line) => log.push(line) });
    expect(new URL(first.url).pathname).toBe("/agentplane");
    await query(first.url, (sql) => sql`create table survivor (v text)`);
    await query(first.url, (sql) => sql`insert into survivor values ('still here')`);
    await first.stop();
    await expect(query(first.url, (sql) => sql`select 1`)).rejects.toThrow(/ECONNREFUSED/);

    const passwordFile = join(root, "data", "postgres-password");
    expect((await stat(passwordFile)).mode & 0o777).toBe(0o600);
    const password = (await readFile(passwordFile, "utf8")).trim();
    expect(password.length).toBeGreaterThanOrEqual(32);
    expect(decodeURIComponent(new URL(first.url).password)).toBe(password);

    const second = await startEmbeddedPostgres({ dataDir, log: (line) => log.push(line) });
    try {
      expect(new URL(second.url).password).toBe(new URL(first.url).password);
      const rows = await query(second.url, (sql) => sql`select v from survivor`);
      expect(rows).toEqual([{ v: "still here" }]);
      const [role] = await query(second.url, (sql) => sql`select current_user as name`);
      expect(role?.name).toBe("agentplane");
      await expect(query(second.url.replace(password, "wrong"), (sql) => sql`select 1`)).rejects.toThrow(
        /password authentication failed/,
      );
    } finally {
      await second.stop();
    }
    expect(log.some((line) => line.includes("database system is ready to accept connections"))).toBe(true);
  });

  it("refuses a directory whose postmaster.pid names a live process", async () => {
    const pidFile = join(dataDir, "postmaster.pid");
    await writeFile(pidFile, `${process.pid}\n${dataDir}\n`);
    try {
      await expect(startEmbeddedPostgres({ dataDir, log: () => {} })).rejects.toThrow(
        `is in use by process ${process.pid}`,
      );
      await expect(stat(pidFile)).resolves.toBeDefined();
    } finally {
      await rm(pidFile);
    }
  });

  it("recovers after the server was killed and left a stale postmaster.pid", async () => {
    const script = `
      const { startEmbeddedPostgres } = await import(process.argv[1]);
      const server = await startEmbeddedPostgres({ dataDir: process.argv[2], log: () => {} });
      process.stdout.write(JSON.stringify({ url: server.url }) + "\\n");
      setInterval(() => {}, 60_000);`;
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script, MODULE, dataDir],
      {
        cwd: REPO_ROOT,
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
    const { url } = JSON.parse(line) as { url: string };
    await query(url, (sql) => sql`insert into survivor values ('written before the crash')`);

    const pid = await postmasterPid(dataDir);
    const workers = await childrenOf(pid);
    process.kill(pid, "SIGKILL");
    await waitUntilGone([pid, ...workers]);
    child.kill("SIGKILL");
    await once(child, "exit");
    expect(await postmasterPid(dataDir)).toBe(pid);

    const log: string[] = [];
    const restarted = await startEmbeddedPostgres({ dataDir, log: (l) => log.push(l) });
    try {
      const rows = await query(restarted.url, (sql) => sql`select v from survivor order by v`);
      expect(rows.map((r) => r.v)).toEqual(["still here", "written before the crash"]);
      expect(log).toContainEqual(
        expect.stringContaining(`removing stale ${join(dataDir, "postmaster.pid")}`),
      );
    } finally {
      await restarted.stop();
    }
  });

  it("shuts Postgres down when the process exits without calling stop()", async () => {
    const script = `
      const { startEmbeddedPostgres } = await import(${JSON.stringify(MODULE)});
      await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, log: () => {} });
      process.exit(0);`;
    expect((await runWithModule(script)).code).toBe(0);
    await vi.waitFor(() => expect(stat(join(dataDir, "postmaster.pid"))).rejects.toThrow(/ENOENT/), {
      timeout: 10_000,
    });
  });

  it("deletes a non-persistent cluster on stop", async () => {
    const scratch = join(root, "scratch", "postgres");
    const server = await startEmbeddedPostgres({
      dataDir: scratch,
      database: "scratch",
      persistent: false,
      durable: false,
      log: () => {},
    });
    const [settings] = await query(
      server.url,
      (sql) => sql`select current_database() as db, current_setting('fsync') as fsync`,
    );
    expect(settings).toEqual({ db: "scratch", fsync: "off" });
    await server.stop();
    await expect(stat(scratch)).rejects.toThrow(/ENOENT/);
  });

  it("names the directory the postgres user cannot enter (when running as root)", async () => {
    const locked = join(root, "locked");
    await mkdir(locked, { mode: 0o700 });
    const start = startEmbeddedPostgres({ dataDir: join(locked, "inner", "postgres"), log: () => {} });
    if (process.getuid?.() === 0) {
      await expect(start).rejects.toThrow(`cannot enter ${locked}. Run \`chmod o+x ${locked}\``);
    } else {
      // Not root: Postgres runs as the owner of the directory, which can enter it.
      const server = await start;
      await server.stop();
    }
  });
});
