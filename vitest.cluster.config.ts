import { defineConfig } from "vitest/config";

// `npm run test:cluster`: the tests of test/cluster/, against the local cluster that
// scripts/test-cluster.mjs starts (npm run cluster); not part of `npm test`.
export default defineConfig({
  test: {
    include: ["test/cluster/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
});
