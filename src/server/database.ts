// The database this instance uses: DATABASE_URL's, or when it is unset a private
// MySQL-compatible server run from the binaries on this machine (embedded-db/).

import path from "node:path";
import { startPrivateServer } from "../embedded-db/private-server.js";
import { projectDir } from "../paths.js";
import { type Database, type DatabaseTimeouts, DEFAULT_TIMEOUTS, type Log, openDatabase } from "../storage/db.js";

export async function openConfiguredDatabase(databaseUrl: string | undefined, log: Log, timeouts: DatabaseTimeouts = DEFAULT_TIMEOUTS): Promise<Database> {
  if (databaseUrl !== undefined) return openDatabase(databaseUrl, timeouts, log);
  const server = await startPrivateServer({ projectDir, log });
  const description = `private server (${path.relative(projectDir, server.socketPath) || server.socketPath})`;
  return openDatabase({ socketPath: server.socketPath, description, stop: () => server.stop() }, timeouts);
}
