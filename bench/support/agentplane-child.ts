/**
 * Child process entry of `spawnAgentplane` (spawn-agentplane.ts): serves agentplane on a free port until SIGTERM,
 * configured from the JSON in the `BENCH_SERVER` environment variable, and prints `{"port":N}` once
 * listening.
 */
import { startBenchApp } from "./bench-app.js";
import { AGENTPLANE_CHILD_ENV, type ChildSetup } from "./spawn-agentplane.js";

const { root, ...setup } = JSON.parse(process.env[AGENTPLANE_CHILD_ENV] ?? "") as ChildSetup;
const app = await startBenchApp(setup, root);
process.once("SIGTERM", () => {
  // process.exit (not a natural end) so --cpu-prof writes its profile even with timers left behind.
  void app.stop().finally(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ port: app.address.port })}\n`);
