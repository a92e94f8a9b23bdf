// Runs once per test run: uses DATABASE_URL's server when it is set, otherwise
// starts (or joins) keyhold's private server, exactly as `npm start` would.
// Each test file then makes its own fresh database on that server.
import type { TestProject } from "vitest/node";
import { projectDir } from "../src/paths.js";
import { startPrivateServer } from "../src/storage/private-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** mysql:// URL of the server, without a database. */
    mysqlServer: string;
  }
}

export default async function setup(project: TestProject) {
  const url = process.env.DATABASE_URL;
  if (url !== undefined && url !== "") {
    const u = new URL(url);
    u.pathname = "/";
    project.provide("mysqlServer", u.toString().replace(/\/$/, ""));
    return;
  }
  const server = await startPrivateServer({ projectDir, log: (line) => console.log(`[tests] ${line}`) });
  project.provide("mysqlServer", `mysql://root@localhost/?socketPath=${encodeURIComponent(server.socketPath)}`);
  return async () => {
    await server.stop();
  };
}
