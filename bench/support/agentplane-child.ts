/**
 * Child process entry of `spawnAgentplane` (spawn-agentplane.ts): serves agentplane on a free port until SIGTERM,
 * configured from the JSON in the `BENCH_SERVER` environment variable, and prints `{"port":N}` once
 * listening. On its IPC channel it answers what the bench asks ({@link ChildRequest}): its traffic
 * to Postgres (pg-wire-meter.ts), and a V8 CPU profile of a window the bench chooses (one cell).
 */
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { startBenchApp } from "./bench-app.js";
import { installPgWireMeter } from "./pg-wire-meter.js";
import { AGENTPLANE_CHILD_ENV, type ChildRequest, type ChildSetup } from "./spawn-agentplane.js";

const { root, ...setup } = JSON.parse(process.env[AGENTPLANE_CHILD_ENV] ?? "") as ChildSetup;
const readWire = installPgWireMeter(Number(new URL(setup.databaseUrl).port));
const app = await startBenchApp(setup, root);
let profiler: Session | undefined;

/** Answers one request of the bench; every request is answered, `null` when it carries nothing back. */
async function answer(request: ChildRequest): Promise<unknown> {
  switch (request.kind) {
    case "wire":
      return readWire();
    case "profile-start":
      profiler = new Session();
      profiler.connect();
      await profiler.post("Profiler.enable");
      await profiler.post("Profiler.start");
      return null;
    case "profile-stop": {
      if (!profiler) throw new Error("no profile was started");
      const { profile } = await profiler.post("Profiler.stop");
      profiler.disconnect();
      profiler = undefined;
      await writeFile(request.file, JSON.stringify(profile));
      return null;
    }
  }
}

process.on("message", (request: ChildRequest) => {
  void answer(request).then(
    (reply) => process.send?.({ ok: true, reply }),
    (error: unknown) => process.send?.({ ok: false, reply: String(error) }),
  );
});
process.once("SIGTERM", () => {
  // process.exit (not a natural end) so --cpu-prof writes its profile even with timers left behind.
  void app.stop().finally(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ port: app.address.port })}\n`);
