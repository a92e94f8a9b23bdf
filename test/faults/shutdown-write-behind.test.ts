// SIGTERM with work recorded behind the requests (analytics events) that the
// database cannot take yet: the analytics tables are held by a lock the test owns.
// The process waits for it, saying how much is waiting, until SHUTDOWN_TIMEOUT_MS
// + SHUTDOWN_FLUSH_TIMEOUT_MS after the signal; then it exits 1 and names what it
// did not write.
import type { PoolConnection } from "mysql2/promise";
import { afterEach, describe, expect, it } from "vitest";
import { useHarness } from "../harness.js";
import { type ServerProcess, startServer } from "../server-process.js";
import { post } from "./client.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** The JSON log lines of the process with this message. */
const logged = (server: ServerProcess, msg: string): Array<Record<string, unknown>> =>
  server
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => String(l.msg).startsWith(msg));

describe("SIGTERM with analytics events the database cannot take yet", () => {
  const h = useHarness();
  let server: ServerProcess | undefined;
  let lock: PoolConnection | undefined;

  afterEach(async () => {
    await lock?.query("UNLOCK TABLES");
    lock?.release();
    lock = undefined;
    await server?.kill();
  });

  /** A server with an API and a key, and the analytics table locked. */
  async function lockedServer(drainMs: number, flushMs: number): Promise<{ server: ServerProcess; verify: () => Promise<void> }> {
    const s = await startServer(h.config.databaseUrl ?? "", { SHUTDOWN_TIMEOUT_MS: String(drainMs), SHUTDOWN_FLUSH_TIMEOUT_MS: String(flushMs) });
    server = s;
    const rk = await h.rootKey(["*"]);
    const api = await post(s.url, "/v2/apis.createApi", { name: "write-behind" }, rk);
    expect(api.status, api.text).toBe(200);
    const key = await post(s.url, "/v2/keys.createKey", { apiId: api.body.data.apiId }, rk);
    expect(key.status, key.text).toBe(200);
    lock = await h.db.pool.getConnection();
    // Both raw tables: 32 or more events of one key in a batch go packed (storage/analytics.ts, PACK_AT_LEAST).
    await lock.query("LOCK TABLES analytics_verifications WRITE, analytics_verifications_packed WRITE");
    const verify = async () => {
      const r = await post(s.url, "/v2/keys.verifyKey", { key: key.body.data.key }, rk);
      expect(r.body.data?.valid, r.text).toBe(true);
    };
    return { server: s, verify };
  }

  const rawRows = async (): Promise<number> => {
    const [rows] = await h.db.pool.query(
      "SELECT (SELECT COUNT(*) FROM analytics_verifications WHERE workspace_id = ?) + (SELECT COALESCE(SUM(n), 0) FROM analytics_verifications_packed WHERE workspace_id = ?) AS n",
      [h.workspaceId, h.workspaceId],
    );
    return Number((rows as Array<{ n: number }>)[0]?.n);
  };

  it("waits for the database, says how much is waiting, writes every event and exits 0", async () => {
    const { server: s, verify } = await lockedServer(10_000, 30_000);
    for (let i = 0; i < 40; i++) await verify();
    s.proc.kill("SIGTERM");
    await until("the write-behind log line", () => logged(s, "writing what the requests recorded behind them").length > 0);
    expect(logged(s, "writing what the requests recorded behind them")[0]).toMatchObject({ analyticsEvents: 40 });
    await sleep(1_500);
    expect(s.proc.exitCode, "the process must wait for the events").toBeNull();
    await lock?.query("UNLOCK TABLES");
    const code = await s.exited;
    expect(code, s.output().split("\n").slice(-6).join("\n")).toBe(0);
    expect(await rawRows()).toBe(40);
    expect(s.output()).not.toMatch(/"level":(50|60)/);
  }, 60_000);

  it("exits 1 when SHUTDOWN_TIMEOUT_MS + SHUTDOWN_FLUSH_TIMEOUT_MS run out, naming what it did not write", async () => {
    // No request is in flight: the 500 ms the drain may take go to writing behind too.
    const { server: s, verify } = await lockedServer(500, 1_500);
    for (let i = 0; i < 25; i++) await verify();
    const signalAt = Date.now();
    s.proc.kill("SIGTERM");
    const code = await Promise.race([s.exited, sleep(15_000).then(() => "still running")]);
    expect(code, s.output().split("\n").slice(-6).join("\n")).toBe(1);
    expect(Date.now() - signalAt).toBeGreaterThanOrEqual(2_000);
    const [last] = logged(s, "exiting with");
    expect(last).toMatchObject({ level: 50, msg: "exiting with 25 analytics events not written: SHUTDOWN_TIMEOUT_MS + SHUTDOWN_FLUSH_TIMEOUT_MS ran out" });
    expect(last?.notWritten).toEqual({ analyticsEvents: 25, lastUsedKeys: 0, lastUsedRootKeys: 0 });
  }, 60_000);
});
