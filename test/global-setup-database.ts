// The contract project's global setup (vitest.config.ts): the same database
// server as test/global-setup.ts (DATABASE_URL's, or the private one, joined),
// and no Redis, which the contract tests do not use.
import type { TestProject } from "vitest/node";
import { provideDatabase } from "./global-setup.js";

export default async function setup(project: TestProject) {
  project.provide("redisUrl", "");
  project.provide("redisClusterUrl", "");
  return provideDatabase(project, async () => undefined);
}
