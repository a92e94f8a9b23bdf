import { configDefaults, defineConfig } from "vitest/config";

// Against the local Galera and Redis clusters: `npm run test:cluster`.
const exclude = [...configDefaults.exclude, "test/cluster/**"];

export default defineConfig({
  test: {
    // Each file builds its own schema and server; files share one database server.
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          // Unit tests sit next to the code; integration and other tests use a real database.
          name: "others",
          globalSetup: ["./test/global-setup.ts"],
          isolate: false,
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
          exclude: [...exclude, "test/contract/**"],
        },
      },
      {
        extends: true,
        test: {
          // The contract tests (one file per operation and status, 231 files) each build
          // their own database and app through useHarness and touch no module state of
          // their own: they share a worker's modules instead of importing the server
          // anew per file. Measured on the 70 files of keys.*: 136 s -> 60 s, the
          // import time 117 s -> 10 s (summed over files).
          name: "contract",
          // The same database server, no Redis.
          globalSetup: ["./test/global-setup-database.ts"],
          include: ["test/contract/**/*.test.ts"],
          exclude,
          isolate: false,
        },
      },
    ],
  },
});
