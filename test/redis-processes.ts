// What the tests that start their own redis-server processes share
// (redis-cluster.ts, redis-sentinel.ts, the RedisLimiter tests).
import { execFile } from "node:child_process";
import net from "node:net";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A TCP port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Whether redis-server and redis-cli are installed. */
export async function redisInstalled(): Promise<boolean> {
  try {
    await run("redis-cli", ["--version"]);
    await run("redis-server", ["--version"]);
    return true;
  } catch {
    return false;
  }
}
