import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // Unit tests sit next to the code; integration and contract tests use a real database.
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Against the local Galera and Redis clusters: `npm run test:cluster`.
    exclude: [...configDefaults.exclude, "test/cluster/**"],
    globalSetup: ["./test/global-setup.ts"],
    // Each file builds its own schema and server; files share one database server.
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
